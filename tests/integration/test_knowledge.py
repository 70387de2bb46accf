"""The knowledge base end to end: loop tools (CRUD, windows, search), chat reads with their
permission matrix, the suggestion queue (bounds, restarts, failed cycles), bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.knowledge import DISABLED, NO_PERMISSION
from amrita_memory_pg.tools.context import CycleContext, ToolContext
from amrita_memory_pg.tools.knowledge import CHAT_ALIASES
from tests.support.memory import memory_on

PLATFORM = "qq"
BODY = "第一行\n第二行\n第三行"


def loop_ctx(cycle_id: int = 1, *, dry_run: bool = False) -> ToolContext:
    return ToolContext(
        platform=PLATFORM,
        user_id="10001",
        cycle=CycleContext(
            cycle_id=cycle_id, target_key="QQPlatform_Private_10001", dry_run=dry_run
        ),
    )


def chat_ctx(
    user: str = "20002", *, group: str | None = None, roles: frozenset[str] = frozenset()
) -> ToolContext:
    return ToolContext(platform=PLATFORM, user_id=user, group_id=group, roles=roles)


SUPER = chat_ctx("1", roles=frozenset({"superuser"}))


async def loop(mem: Memory, name: str, args: dict[str, Any], ctx: ToolContext | None = None) -> Any:
    return json.loads(await mem.registries["consolidation"].call(name, args, ctx or loop_ctx()))


async def chat(mem: Memory, name: str, args: dict[str, Any], ctx: ToolContext) -> Any:
    return json.loads(await mem.call_tool(name, args, ctx))


async def table(mem: Memory) -> list[tuple[Any, ...]]:
    rows = await mem.pool.fetch(
        "SELECT kid, title, summary, body, embedding::text, updated_at FROM amrita_memory.knowledge ORDER BY kid"
    )
    return [tuple(r.values()) for r in rows]


async def suggestions(mem: Memory) -> list[tuple[Any, ...]]:
    rows = await mem.pool.fetch(
        "SELECT id, status, claimed_by_cycle, title FROM amrita_memory.knowledge_suggestion ORDER BY id"
    )
    return [tuple(r.values()) for r in rows]


@pytest.fixture
async def mem(db_dsn: str, tmp_path: Path) -> Any:
    async with memory_on(db_dsn, tmp_path, subconscious__enabled=True) as opened:
        yield opened


async def test_loop_tools_create_read_update_search_delete(mem: Memory) -> None:
    created = await loop(
        mem,
        "subconscious_knowledge_create",
        {"title": "猫的饮食", "summary": "猫不能吃巧克力和洋葱", "body": BODY},
    )
    assert created["status"] == "success" and len(created["kid"]) == 8
    # the first write of an empty store records its model, as a memory's does
    meta = await mem.pool.fetchrow("SELECT embed_model, embed_dim FROM amrita_memory.store_meta")
    assert tuple(meta.values()) == ("hash-384", 384)
    kid = created["kid"]
    other = (
        await loop(
            mem,
            "subconscious_knowledge_create",
            {"title": "咖啡", "summary": "咖啡豆的烘焙程度", "body": ""},
        )
    )["kid"]

    listed = await loop(mem, "subconscious_knowledge_list", {})
    assert listed["total"] == 2
    first = listed["items"][0]
    assert first["kid"] == kid and first["summary_preview"] == "猫不能吃巧克力和洋葱"
    assert (first["total_lines"], first["char_count"]) == (3, len(BODY))
    assert listed["items"][1]["total_lines"] == 0  # an empty body has no lines (B9)

    read = await loop(mem, "subconscious_knowledge_read", {"kid": kid, "start_line": 1})
    assert read == {
        "status": "success",
        "kid": kid,
        "title": "猫的饮食",
        "summary": "猫不能吃巧克力和洋葱",
        "body_lines": ["第二行", "第三行"],
        "total_lines": 3,
        "range_start": 1,
        "range_end": 3,
    }
    # end past the last line reads to the end
    read = await loop(mem, "subconscious_knowledge_read", {"kid": kid, "end_line": 99})
    assert read["range_end"] == 3 and len(read["body_lines"]) == 3

    # a line range: replace line 1, insert before line 0, delete the last line
    updated = await loop(
        mem,
        "subconscious_knowledge_update",
        {"kid": kid, "body": "新的第二行", "start_line": 1, "end_line": 2},
    )
    assert updated["status"] == "success" and updated["message"] == "知识更新成功"
    await loop(
        mem,
        "subconscious_knowledge_update",
        {"kid": kid, "body": "开头", "start_line": 0, "end_line": 0},
    )
    await loop(
        mem,
        "subconscious_knowledge_update",
        {"kid": kid, "body": "", "start_line": 3, "end_line": 4},
    )
    read = await loop(mem, "subconscious_knowledge_read", {"kid": kid})
    assert read["body_lines"] == ["开头", "第一行", "新的第二行"]

    # a new summary is re-embedded: search finds the entry by it
    before = {r[0]: r[4] for r in await table(mem)}
    await loop(
        mem, "subconscious_knowledge_update", {"kid": other, "summary": "意式浓缩的萃取时间"}
    )
    after = {r[0]: r[4] for r in await table(mem)}
    assert after[other] != before[other] and after[kid] == before[kid]
    found = await loop(mem, "subconscious_knowledge_search", {"query": "意式浓缩的萃取时间"})
    assert found["status"] == "success" and found["items"][0]["kid"] == other
    assert found["items"][0]["distance"] == pytest.approx(0.0, abs=1e-5)
    # release 1's keys, plus what hybrid mode (the default) ranked by
    assert set(found["items"][0]) == {
        "kid",
        "title",
        "summary",
        "distance",
        "score",
        "keyword_score",
    }
    assert found["mode"] == "hybrid"

    deleted = await loop(mem, "subconscious_knowledge_delete", {"kid": other})
    assert deleted == {"status": "success", "message": "知识删除成功", "kid": other}
    assert (await loop(mem, "subconscious_knowledge_list", {}))["total"] == 1


async def test_bad_input_is_one_clear_envelope_and_writes_nothing(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(
        db_dsn, tmp_path, subconscious__enabled=True, subconscious__knowledge_max_chars=500
    ) as mem:
        kid = (
            await loop(
                mem, "subconscious_knowledge_create", {"title": "t", "summary": "s", "body": BODY}
            )
        )["kid"]
        before = await table(mem)
        cases: list[tuple[str, dict[str, Any], str]] = [
            (
                "subconscious_knowledge_create",
                {"title": "t", "summary": "s", "body": "x" * 501},
                "Body exceeds max_chars (501 > 500)",
            ),
            (
                "subconscious_knowledge_update",
                {"kid": kid, "body": "x" * 501},
                "Body exceeds max_chars (501 > 500)",
            ),
            # a range edit whose RESULT is too long: only the write itself can tell
            (
                "subconscious_knowledge_update",
                {"kid": kid, "body": "y" * 490, "start_line": 3},
                "Body exceeds max_chars",
            ),
            ("subconscious_knowledge_read", {"kid": "ffffffff"}, "Knowledge not found: ffffffff"),
            (
                "subconscious_knowledge_update",
                {"kid": "ffffffff", "title": "x"},
                "Knowledge not found: ffffffff",
            ),
            ("subconscious_knowledge_delete", {"kid": "ffffffff"}, "Knowledge not found: ffffffff"),
            ("subconscious_knowledge_read", {"kid": kid, "start_line": 4}, "start_line 4 超出范围"),
            (
                "subconscious_knowledge_read",
                {"kid": kid, "start_line": -1},
                "start_line 不能为负数",
            ),
            (
                "subconscious_knowledge_read",
                {"kid": kid, "start_line": 2, "end_line": 1},
                "end_line 不能小于 start_line",
            ),
            (
                "subconscious_knowledge_update",
                {"kid": kid, "body": "z", "start_line": 2, "end_line": 9},
                "行范围越界",
            ),
            (
                "subconscious_knowledge_update",
                {"kid": kid},
                "At least one of title/summary/body must be provided",
            ),
            (
                "subconscious_knowledge_create",
                {"title": "两\n行", "summary": "s", "body": ""},
                "title 只能是一行",
            ),
            (
                "subconscious_knowledge_create",
                {"title": "t", "summary": "a\n---\nb", "body": ""},
                "summary 不能含单独一行的 ---",
            ),
            (
                "subconscious_knowledge_create",
                {"title": "t", "summary": " ", "body": ""},
                "summary 不能为空",
            ),
            ("subconscious_knowledge_search", {"query": "  "}, "query 不能为空"),
        ]
        for name, args, message in cases:
            reply = await loop(mem, name, args)
            assert reply["status"] == "error", (name, args, reply)
            assert message in reply["message"], (name, args, reply)
        assert await table(mem) == before

        # without a cycle (a chat context) the loop tools refuse
        no_cycle = await loop(mem, "subconscious_knowledge_list", {}, chat_ctx())
        assert no_cycle["status"] == "error" and "cycle" in no_cycle["message"]
        # a dry-run cycle writes nothing
        dry = await loop(
            mem,
            "subconscious_knowledge_delete",
            {"kid": kid},
            loop_ctx(dry_run=True),
        )
        assert dry["status"] == "success" and dry["dry_run"] is True
        assert await table(mem) == before


async def test_the_configured_limit_is_the_limit_above_10000_too(
    db_dsn: str, tmp_path: Path
) -> None:
    """B8: the reference's tools refused 10001 characters whatever the config said."""
    async with memory_on(
        db_dsn, tmp_path, subconscious__enabled=True, subconscious__knowledge_max_chars=20000
    ) as mem:
        reply = await loop(
            mem,
            "subconscious_knowledge_create",
            {"title": "t", "summary": "s", "body": "长" * 15000},
        )
        assert reply["status"] == "success"
        refused = await loop(
            mem,
            "subconscious_knowledge_create",
            {"title": "t", "summary": "s", "body": "长" * 20001},
        )
        assert refused["message"] == "Body exceeds max_chars (20001 > 20000)"


#: (context, knowledge_read_group_admins) → may read
MATRIX: list[tuple[str, ToolContext, bool, bool]] = [
    ("superuser private", chat_ctx("1", roles=frozenset({"superuser"})), False, True),
    ("superuser group", chat_ctx("1", group="9", roles=frozenset({"superuser"})), False, True),
    ("lp.admin", chat_ctx("2", group="9", roles=frozenset({"lp.admin"})), False, True),
    ("liteperm node", chat_ctx("3", roles=frozenset({"memory.knowledge"})), False, True),
    ("owner, config off", chat_ctx("4", group="9", roles=frozenset({"owner"})), False, False),
    ("owner, config on", chat_ctx("4", group="9", roles=frozenset({"owner"})), True, True),
    ("admin, config off", chat_ctx("5", group="9", roles=frozenset({"admin"})), False, False),
    ("admin, config on", chat_ctx("5", group="9", roles=frozenset({"admin"})), True, True),
    # an owner role only counts in its group: a private chat has none
    ("owner role in private", chat_ctx("4", roles=frozenset({"owner"})), True, False),
    ("granted, private", chat_ctx("777"), False, True),
    ("granted, group", chat_ctx("777", group="9"), False, True),
    ("plain, private", chat_ctx("888"), True, False),
    ("plain, group", chat_ctx("888", group="9"), True, False),
]


@pytest.mark.parametrize(
    ("case", "ctx", "admins_read", "allowed"), MATRIX, ids=[m[0] for m in MATRIX]
)
async def test_who_reads_the_knowledge_base_from_the_chat(
    db_dsn: str, tmp_path: Path, case: str, ctx: ToolContext, admins_read: bool, allowed: bool
) -> None:
    # The L3 loop is off (the default): chat reads do not need it (W21).
    async with memory_on(
        db_dsn, tmp_path, subconscious__knowledge_read_group_admins=admins_read
    ) as mem:
        assert "consolidation" not in mem.registries
        written = await mem.knowledge.create(title="秘密标题", summary="秘密摘要", body=BODY)
        await mem.knowledge.grant("777", by="test")
        calls = [
            ("knowledge_list", {}),
            ("knowledge_read", {"kid": written.kid}),
            ("knowledge_read", {"kid": "ffffffff"}),
            ("knowledge_search", {"query": "秘密摘要"}),
        ]
        for name, args in calls:
            for called in (name, f"subconscious_{name}"):  # the reference's wire name too
                text = await mem.call_tool(called, args, ctx)
                reply = json.loads(text)
                if allowed:
                    expected = "error" if args.get("kid") == "ffffffff" else "success"
                    assert reply["status"] == expected, (case, called, reply)
                else:
                    # the same sentence for a real and an unknown kid: nothing leaks
                    assert reply == {"status": "error", "message": NO_PERMISSION}, (case, called)
                    assert "秘密" not in text and written.kid not in text


async def test_aliases_are_accepted_but_not_shown(db_dsn: str, tmp_path: Path) -> None:
    """D3: the README's names are the tools; the reference's wire names are aliases."""
    assert CHAT_ALIASES == {
        "subconscious_knowledge_list": "knowledge_list",
        "subconscious_knowledge_read": "knowledge_read",
        "subconscious_knowledge_search": "knowledge_search",
    }
    async with memory_on(db_dsn, tmp_path) as mem:
        shown = [s["function"]["name"] for s in mem.tool_schemas()]
        assert [n for n in shown if "knowledge" in n] == [
            "knowledge_list",
            "knowledge_read",
            "knowledge_search",
            "knowledge_suggest",
        ]
        assert mem.tools.aliases() == CHAT_ALIASES
        await mem.knowledge.create(title="t", summary="s", body="b")
        for alias, name in CHAT_ALIASES.items():
            args = {"query": "s"} if name.endswith("search") else {}
            if name.endswith("read"):
                args = {"kid": (await mem.knowledge.entries())[0].kid}
            assert await mem.call_tool(alias, args, SUPER) == await mem.call_tool(name, args, SUPER)
        # the write tools of the loop are not reachable from the chat under any name
        for name in ("subconscious_knowledge_create", "subconscious_read_suggestions"):
            reply = json.loads(await mem.call_tool(name, {}, SUPER))
            assert reply["message"].startswith(f"未知工具 {name}")


async def test_a_disabled_knowledge_base_says_so(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, subconscious__enable_knowledge=False) as mem:
        reply = await chat(mem, "knowledge_list", {}, SUPER)
        assert reply == {"status": "error", "message": DISABLED}
        # the refusal of a reader without permission still comes first: it names nothing
        assert (await chat(mem, "knowledge_list", {}, chat_ctx()))["message"] == NO_PERMISSION


def suggestion(title: str = "建议标题", **extra: Any) -> dict[str, Any]:
    return {
        "action": "create",
        "title": title,
        "summary": "一段摘要",
        "body": "正文",
        "reason": "常被问到",
        **extra,
    }


async def test_anyone_may_suggest_within_the_bounds(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(
        db_dsn,
        tmp_path,
        subconscious__knowledge_suggest_max=3,
        subconscious__knowledge_suggest_per_hour=2,
    ) as mem:
        ok = await chat(mem, "knowledge_suggest", suggestion(), chat_ctx("1"))
        assert ok["status"] == "success" and ok["action"] == "create"
        assert ok["message"] == "知识建议已提交，后台记忆管家将在下一轮推理中审查。"
        await chat(mem, "knowledge_suggest", suggestion("b"), chat_ctx("1"))
        # a flood from one user: the third in the hour is refused, nothing written
        flood = await chat(mem, "knowledge_suggest", suggestion("c"), chat_ctx("1"))
        assert flood["status"] == "error" and "每 60 分钟最多 2 条" in flood["message"]
        assert len(await suggestions(mem)) == 2
        await chat(mem, "knowledge_suggest", suggestion("d"), chat_ctx("2", group="9"))
        # the queue is full: the NEW one is refused, the queued ones stay
        full = await chat(mem, "knowledge_suggest", suggestion("e"), chat_ctx("3"))
        assert full["status"] == "error" and "队列已满（3/3" in full["message"]
        assert [r[3] for r in await suggestions(mem)] == ["建议标题", "b", "d"]

        before = await suggestions(mem)
        bad = [
            (suggestion(action="update"), "action=update 时必须给出 kid"),
            (suggestion(action="update", kid="ffffffff"), "Knowledge not found: ffffffff"),
            (suggestion(body="x" * 10001), "Body exceeds max_chars (10001 > 10000)"),
            (suggestion(title="x" * 201), "title 过长"),
            (suggestion(reason="x" * 1001), "reason 过长"),
            (suggestion(action="delete"), "action 只能是 create | update"),
        ]
        for args, message in bad:
            reply = await chat(mem, "knowledge_suggest", args, chat_ctx("4"))
            assert reply["status"] == "error" and message in reply["message"], (args, reply)
        assert await suggestions(mem) == before


async def test_suggestions_survive_a_restart_and_a_failed_cycle(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, subconscious__enabled=True) as mem:
        kid = (await mem.knowledge.create(title="t", summary="s", body="")).kid
        await chat(mem, "knowledge_suggest", suggestion("新建"), chat_ctx("1"))
        await chat(
            mem,
            "knowledge_suggest",
            suggestion("更新", action="update", kid=kid),
            chat_ctx("2"),
        )
    # closed and reopened on the same database: still there
    async with memory_on(db_dsn, tmp_path, subconscious__enabled=True) as mem:
        assert [(r[1], r[3]) for r in await suggestions(mem)] == [
            ("pending", "新建"),
            ("pending", "更新"),
        ]
        # cycle 7 claims them (the loop tool), then fails: released, pending again
        claimed = await loop(mem, "subconscious_read_suggestions", {}, loop_ctx(7))
        assert claimed["total"] == 2
        assert claimed["suggestions"][1]["kid"] == kid
        assert claimed["suggestions"][1]["action"] == "update"
        assert {r[1:3] for r in await suggestions(mem)} == {("claimed", 7)}
        # a second cycle meanwhile sees none of them
        assert (await loop(mem, "subconscious_read_suggestions", {}, loop_ctx(8)))["total"] == 0
        assert await mem.knowledge.release_suggestions(7) == 2
        assert {r[1:3] for r in await suggestions(mem)} == {("pending", None)}
        # a dry run looks without claiming
        dry = await loop(mem, "subconscious_read_suggestions", {}, loop_ctx(9, dry_run=True))
        assert dry["total"] == 2 and {r[1] for r in await suggestions(mem)} == {"pending"}
    async with memory_on(db_dsn, tmp_path, subconscious__enabled=True) as mem:
        claimed = await loop(mem, "subconscious_read_suggestions", {}, loop_ctx(10))
        assert claimed["total"] == 2
        # re-reading within the cycle returns what it holds
        assert (await loop(mem, "subconscious_read_suggestions", {}, loop_ctx(10)))["total"] == 2
        assert await mem.knowledge.complete_suggestions(10) == 2
        assert (await mem.knowledge.pending_suggestions())[0] == 0
        assert {r[1] for r in await suggestions(mem)} == {"done"}
        # done is done: a later cycle gets nothing, a release changes nothing
        assert await mem.knowledge.release_suggestions(10) == 0
        assert (await loop(mem, "subconscious_read_suggestions", {}, loop_ctx(11)))["total"] == 0
