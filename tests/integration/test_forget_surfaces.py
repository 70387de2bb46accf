"""Deleting with the cascade, forgetting and erasing on every surface — the chat tools,
``/memory``, the CLI and the admin page — over the same use cases, each showing what it
reaches before it runs; and what a change of a fact withholds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx

from amrita_memory_pg.commands.memory_command import MemoryCommand
from amrita_memory_pg.domain.lineage import Derivation, deriving
from amrita_memory_pg.domain.profile import ProfileActor, ProfileEdit
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.web import create_admin_app
from amrita_memory_pg.web.security import hash_password
from tests.support.cli import run_cli
from tests.support.memory import memory_on

P = "QQPlatform_Private_10001"
ME = ToolContext(platform="qq", user_id="10001")
ROOT = ToolContext(platform="qq", user_id="10001", roles=frozenset({"superuser"}))
ADMIN_PASS = "forget-admin-pass"
SUPER_PASS = "forget-super-pass"
DERIVED_LINES = ("对花生过敏", "周六爬山，也对花生过敏")


async def plant(mem: Memory) -> tuple[str, str]:
    """A fact, another, and profile lines the loop derived from them (the real write path:
    the profile save records the lineage inside the loop's derivation)."""
    fact = (await mem.memories.add(partition_key=P, scope="user", content="用户对花生过敏")).id
    hike = (await mem.memories.add(partition_key=P, scope="user", content="用户周六爬山")).id
    with deriving(Derivation("l3", 1, partition_key=P)):
        await mem.profiles.edit(
            P, ProfileEdit("周六爬山", DERIVED_LINES), ProfileActor("loop", cycle_id=1)
        )
    return fact, hike


async def profile_lines(mem: Memory) -> tuple[str, ...]:
    return (await mem.profiles.get(P)).lines


async def tasks(mem: Memory) -> list[tuple[str, str]]:
    rows = await mem.pool.fetch("SELECT kind, reason FROM amrita_memory.rederive_task ORDER BY id")
    return [(r["kind"], r["reason"]) for r in rows]


async def test_the_chat_tools_delete_with_the_cascade_and_forget_in_two_steps(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        fact, hike = await plant(mem)

        async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            reply: dict[str, Any] = json.loads(await mem.call_tool(name, args, ME))
            return reply

        deleted = await call("delete_memory", {"id": hike, "scope": "user"})
        # the reference's reply, plus what became of what was made from it
        assert deleted == {
            "status": "success",
            "message": "记忆删除成功",
            "id": hike,
            "derived": {"deleted": 1, "withheld": 1},  # the summary; the line of both
        }
        assert await profile_lines(mem) == ("对花生过敏",)
        assert await tasks(mem) == [("profile_line", "delete")]
        # a delete is not a forget: the history keeps the memory, nothing is in the ledger
        assert await mem.trail.history(P, hike, 5)
        assert await mem.cases.forgetting.ledger() == []

        found = await call("forget_memory", {"query": "花生过敏", "scope": "user"})
        assert found["status"] == "confirm" and found["candidates"][0]["id"] == fact
        assert await mem.memories.count(P) == 1  # finding forgets nothing
        done = await call("forget_memory", {"id": fact, "scope": "user"})
        assert done["status"] == "success" and done["forgotten"]["derived_deleted"] == 1
        assert await profile_lines(mem) == ()
        assert await mem.trail.history(P, fact, 5) == []
        assert [e.kind for e in await mem.cases.forgetting.ledger()] == ["forget"]

        # a memory a person wrote is theirs to forget: the chat model is refused
        manual = await mem.memories.add(
            partition_key=P, scope="user", content="我的生日是五月三日", source="user"
        )
        refused = await call("forget_memory", {"id": manual.id, "scope": "user"})
        assert refused["status"] == "error" and "source=user" in refused["message"]
        assert await mem.memories.get(P, manual.id) is not None


async def test_a_changed_fact_withholds_what_was_made_from_it_the_loops_rewrite_does_not(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        fact, _hike = await plant(mem)
        reply = json.loads(
            await mem.call_tool(
                "update_memory", {"id": fact, "content": "用户不再对花生过敏", "scope": "user"}, ME
            )
        )
        assert reply["status"] == "success"
        # both lines and nothing else: the summary came from 爬山 alone
        assert await profile_lines(mem) == ()
        assert (await mem.profiles.get(P)).summary == "周六爬山"
        assert await tasks(mem) == [("profile_line", "change"), ("profile_line", "change")]
        about = await mem.pool.fetchval("SELECT about FROM amrita_memory.rederive_task LIMIT 1")
        assert json.loads(about) == [{"was": "用户对花生过敏", "now": "用户不再对花生过敏"}]

        await mem.pool.execute("DELETE FROM amrita_memory.rederive_task")
        with deriving(Derivation("l3", 1, partition_key=P)):
            await mem.profiles.edit(
                P, ProfileEdit("周六爬山", ("不再对花生过敏",)), ProfileActor("loop", cycle_id=2)
            )
            # the loop's own rewrite of the fact keeps its meaning: nothing is withheld
            await mem.cases.memories.change(P, fact, _content("用户已经不对花生过敏了"))
        assert await profile_lines(mem) == ("不再对花生过敏",)
        assert await tasks(mem) == []


def _content(text: str) -> Any:
    from amrita_memory_pg.usecases.values import MemoryChange

    return MemoryChange(content=text)


async def test_memory_command_shows_the_cascade_and_runs_it_only_with_its_code(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        fact, hike = await plant(mem)
        command = MemoryCommand.over(mem)

        async def say(ctx: ToolContext, text: str) -> str:
            reply = await command.run(ctx, text)
            return str(getattr(reply, "text", reply))

        listed = await say(ME, "user forget 花生")
        assert "请用 ID 指定" in listed and fact in listed
        plan = await say(ME, f"user forget {fact}")
        assert "删除（只由它得来）画像行「对花生过敏」" in plan
        assert "暂停使用并交给整理循环重写" in plan
        code = re.search(rf"forget {fact} ([0-9a-f]{{8}})", plan)
        assert code is not None
        assert await mem.memories.count(P) == 2  # shown, not done
        wrong = await say(ME, f"user forget {fact} 00000000")
        assert "确认码不匹配" in wrong and await mem.memories.count(P) == 2
        done = await say(ME, f"user forget {fact} {code.group(1)}")
        assert done.startswith(f"✅ 已忘记 👤个人 的记忆 [{fact}]") or fact in done
        assert await mem.memories.get(P, fact) is None
        assert await profile_lines(mem) == ()

        deleted = await say(ME, f"user delete {hike}")
        assert "已删除" in deleted

        # erasing is for superusers, and shown first too
        assert (await say(ME, "erase user")).startswith("未知选项")
        shown = await say(ROOT, "erase user")
        assert "将彻底擦除" in shown and "rederive_task" in shown
        code = re.search(r"/memory erase \S+ ([0-9a-f]{8})", shown)
        assert code is not None
        # the person's own confirming line (the chat hook logs it) does not void the code
        await mem.activity.record_user_message(
            session_key=P, user_key=P, user_id="10001", group_id=None, text="/memory erase user"
        )
        erased = await say(ROOT, f"erase user {code.group(1)}")
        assert erased.startswith(f"✅ 已擦除 {P}")
        assert (
            await mem.pool.fetchval(
                "SELECT count(*) FROM amrita_memory.rederive_task WHERE partition_key = $1", P
            )
            == 0
        )
        assert await mem.profiles.get(P) == (await mem.profiles.get("QQPlatform_Private_0"))


async def test_the_cli_forgets_erases_and_shows_lineage_and_the_ledger(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        fact, hike = await plant(mem)
    env = {
        "DATABASE_URL": db_dsn,
        "EMBEDDING_PROCTOL": "hash",
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path),
    }

    lineage = run_cli("memory", "history", P, fact, env=env)
    assert lineage.returncode == 0, lineage.stderr
    assert "used by:" in lineage.stdout and "对花生过敏" in lineage.stdout

    dry = run_cli("forget", P, fact, "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert "delete profile line" in dry.stdout
    assert "withhold until derived again profile line" in dry.stdout
    done = run_cli("forget", P, fact, "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert "derived rows deleted 1, withheld for the L3 loop 1" in done.stdout

    ledger = run_cli("ledger", env=env)
    assert "forget" in ledger.stdout and "by cli:" in ledger.stdout
    assert "花生" not in ledger.stdout and P not in ledger.stdout  # no content, no key
    waiting = run_cli("rederive", P, env=env)
    assert "profile line" in waiting.stdout and "1 waiting" in waiting.stdout

    deleted = run_cli("memory", "delete", P, hike, "--yes", env=env)
    assert deleted.returncode == 0, deleted.stderr

    preview = run_cli("erase", P, "--dry-run", env=env)
    assert preview.returncode == 0 and "profile" in preview.stdout
    erased = run_cli("erase", P, "--yes", env=env)
    assert erased.returncode == 0, erased.stderr
    assert "receipt (rows removed per table, no content)" in erased.stdout
    assert "subject sha256" in erased.stdout
    again = run_cli("erase", P, "--yes", env=env)
    assert f"{P} holds nothing to erase" in again.stdout


async def test_the_admin_page_forgets_and_erases_after_showing_what_it_reaches(
    db_dsn: str, tmp_path: Path
) -> None:
    overrides = {
        "web__password_hash": hash_password(ADMIN_PASS),
        "web__superuser_password_hash": hash_password(SUPER_PASS),
    }
    async with memory_on(db_dsn, tmp_path, **overrides) as mem:
        fact, _hike = await plant(mem)
        app = create_admin_app(mem, mem.settings)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://admin") as client:

            async def csrf(path: str) -> str:
                found = re.search(r'name="csrf" value="([^"]+)"', (await client.get(path)).text)
                assert found is not None
                return found.group(1)

            async def login(password: str) -> None:
                token = await csrf("/login")
                data = {"password": password, "csrf": token, "name": "carol"}
                assert (await client.post("/login", data=data)).status_code == 303

            await login(ADMIN_PASS)
            trail = await client.get(f"/p/{P}/memories/{fact}/trail")
            assert 'id="used-by"' in trail.text and "对花生过敏" in trail.text
            page = await client.get(f"/p/{P}/memories/{fact}/forget")
            assert page.status_code == 200
            assert 'data-action="delete"' in page.text and 'data-action="withhold"' in page.text
            code = re.search(r'name="code" value="([0-9a-f]{8})"', page.text)
            assert code is not None
            token = await csrf(f"/p/{P}/memories/{fact}/forget")
            stale = await client.post(
                f"/p/{P}/memories/{fact}/forget", data={"csrf": token, "code": "00000000"}
            )
            assert stale.status_code == 409 and await mem.memories.get(P, fact) is not None
            done = await client.post(
                f"/p/{P}/memories/{fact}/forget", data={"csrf": token, "code": code.group(1)}
            )
            assert done.status_code == 303 and "done=forgotten" in done.headers["location"]
            assert await mem.memories.get(P, fact) is None
            audit = await mem.pool.fetchrow(
                "SELECT detail, target_id FROM amrita_memory.admin_audit WHERE action = 'memory.forget'"
            )
            assert audit["target_id"] == fact and "花生" not in audit["detail"]

            assert (await client.get(f"/p/{P}/erase")).status_code in (303, 403)  # not a superuser
            await login(SUPER_PASS)
            page = await client.get(f"/p/{P}/erase")
            code = re.search(r"\(type ([0-9a-f]{8})\)|（输入 ([0-9a-f]{8})）", page.text)
            typed = re.search(r"[0-9a-f]{8}", code.group(0)).group(0) if code else ""
            assert 'id="erase-plan"' in page.text and typed
            token = await csrf(f"/p/{P}/erase")
            receipt = await client.post(f"/p/{P}/erase", data={"csrf": token, "code": typed})
            assert receipt.status_code == 200 and 'id="receipt"' in receipt.text
        assert await mem.memories.count(P) == 0
        erase_audit = await mem.pool.fetchrow(
            "SELECT partition_key, detail FROM amrita_memory.admin_audit WHERE action = 'partition.erase'"
        )
        assert erase_audit["partition_key"] is None and P not in erase_audit["detail"]
        assert [e.kind for e in await mem.cases.forgetting.ledger()] == ["erase", "forget"]
