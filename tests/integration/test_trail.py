"""The memory's trail on a real PostgreSQL: the access log (written on
every recall surface, bounded, never failing a read), the change history by actor kind
for each write path, pausing a partition (read, injection, writes), and the inspector
equal to what the injection hook builds."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply
from amrita_memory_pg.domain.consolidation import CycleContext
from amrita_memory_pg.domain.errors import MemoryPaused
from amrita_memory_pg.domain.keys import GLOBAL_KEY
from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.maintenance.legacy_import import import_legacy
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.inspector import inspect_chat
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from tests.support.cli import run_cli
from tests.support.l3 import loop_memory
from tests.support.legacy import build_old_install
from tests.support.memory import memory_on

ALICE = ToolContext(platform="qq", user_id="10001")
ALICE_IN_GROUP = ToolContext(platform="qq", user_id="10001", group_id="30003")
ROOT = ToolContext(platform="qq", user_id="99999", roles=frozenset({"superuser"}))
KEY = ALICE.personal_key
GROUP = "QQPlatform_Group_30003"


@pytest.fixture
async def mem(db_dsn: str, tmp_path: Path) -> AsyncIterator[Memory]:
    async with memory_on(
        db_dsn,
        tmp_path,
        trail__access_per_memory=3,
        trail__history_per_memory=4,
        injection__enabled=True,
    ) as opened:
        yield opened


async def call(mem: Memory, tool: str, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(await mem.call_tool(tool, args, ctx))
    return reply


async def run(mem: Memory, ctx: ToolContext, text: str) -> str:
    command = MemoryCommand.over(mem)
    reply = await command.run(ctx, text)
    assert isinstance(reply, TextReply)
    return reply.text


async def write(mem: Memory, content: str, ctx: ToolContext = ALICE, scope: str = "user") -> str:
    reply = await call(
        mem,
        "write_memory",
        {"content": content, "tags": "t", "importance": "medium", "scope": scope},
        ctx,
    )
    assert reply["status"] == "success", reply
    return str(reply["memory_id"])


async def accesses(mem: Memory, key: str = KEY) -> list[dict[str, Any]]:
    rows = await mem.pool.fetch(
        "SELECT memory_id, surface, chat_key, who, query, score FROM amrita_memory.memory_access "
        "WHERE partition_key = $1 ORDER BY seq",
        key,
    )
    return [dict(r.items()) for r in rows]


async def changes(mem: Memory, key: str = KEY) -> list[tuple[Any, ...]]:
    rows = await mem.pool.fetch(
        "SELECT memory_id, actor_kind, actor_id, op FROM amrita_memory.memory_change "
        "WHERE partition_key = $1 ORDER BY seq",
        key,
    )
    return [tuple(r.values()) for r in rows]


# ---------------------------------------------------------------- access log


async def test_read_memory_logs_each_hit_with_chat_speaker_redacted_query_and_score(
    mem: Memory,
) -> None:
    cat = await write(mem, "用户喜欢猫")
    await write(mem, "用户住在杭州")
    reply = await call(
        mem,
        "read_memory",
        {"query": "猫 api_key=sk-abcdefghijklmnop", "top_k": 1, "scope": "user"},
        ALICE_IN_GROUP,
    )
    assert reply["status"] == "success" and reply["ids"] == [[cat]]
    (row,) = await accesses(mem)
    assert (row["memory_id"], row["surface"], row["chat_key"], row["who"]) == (
        cat,
        "tool",
        GROUP,
        "10001",
    )
    assert row["query"] is not None and "sk-abc" not in row["query"] and "***" in row["query"]
    # the log keeps the ranking key (decay_score is the reference's formula)
    assert row["score"] == pytest.approx(reply["metadatas"][0][0]["score"], abs=1e-4)

    # /memory search logs as the command surface
    await run(mem, ALICE, "user search 猫")
    assert {r["surface"] for r in await accesses(mem)} == {"tool", "command"}


async def test_the_log_keeps_the_newest_n_per_memory_injections_counted_apart(
    mem: Memory,
) -> None:
    cat = await write(mem, "用户喜欢猫")
    for i in range(5):
        await call(mem, "read_memory", {"query": f"猫 {i}", "top_k": 1, "scope": "user"}, ALICE)
    for _ in range(5):
        assert "用户喜欢猫" in await mem.memory_block(ALICE)
        await mem.trail.flush()  # the turn's log is written in the background
    rows = await accesses(mem)
    searches = [r for r in rows if r["surface"] == "tool"]
    injected = [r for r in rows if r["surface"] == "inject"]
    assert [r["query"] for r in searches] == ["猫 2", "猫 3", "猫 4"]  # newest 3 (setting)
    assert len(injected) == 3 and all(r["memory_id"] == cat for r in injected)
    assert all(r["chat_key"] == KEY and r["score"] is None for r in injected)
    # the rows go with their memory
    await call(mem, "delete_memory", {"id": cat, "scope": "user"}, ALICE)
    assert await accesses(mem) == []


async def test_a_failing_log_never_fails_the_read(
    mem: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    cat = await write(mem, "用户喜欢猫")
    # the read's log, in its own statement (recall_v1) or in the read's (log_access_v1)
    await mem.pool.execute(
        "ALTER FUNCTION amrita_memory.recall_v1(text, text[], float8[], timestamptz, text, "
        "text, text, text, integer, boolean) RENAME TO recall_broken"
    )
    await mem.pool.execute(
        "ALTER FUNCTION amrita_memory.log_access_v1(text[], text[], float8[], timestamptz, "
        "text, text, text, text, integer) RENAME TO log_access_broken"
    )
    with caplog.at_level(logging.WARNING):
        reply = await call(mem, "read_memory", {"query": "猫", "scope": "user"}, ALICE)
    assert reply["status"] == "success" and reply["ids"] == [[cat]]
    assert "logging the recall" in caplog.text
    assert await accesses(mem) == []


# ---------------------------------------------------------------- change history


async def test_history_names_the_chat_llm_and_the_person_for_each_write(mem: Memory) -> None:
    mid = await write(mem, "用户喜欢猫", ALICE_IN_GROUP)
    await call(mem, "update_memory", {"id": mid, "content": "用户喜欢狗", "scope": "user"}, ALICE)
    await call(mem, "update_memory", {"id": mid, "tags": "pet", "scope": "user"}, ALICE)
    added = await run(mem, ALICE, "user add 我的生日是五月一日")
    manual = added.split("[", 1)[1].split("]", 1)[0]
    await run(mem, ALICE, f"user delete {manual}")
    await call(mem, "delete_memory", {"id": mid, "scope": "user"}, ALICE)
    assert await changes(mem) == [
        (mid, "llm", GROUP, "create"),
        (mid, "llm", KEY, "update"),
        (mid, "llm", KEY, "tag"),
        (manual, "person", "10001", "create"),
        (manual, "person", "10001", "delete"),
        (mid, "llm", KEY, "delete"),
    ]
    history = await mem.trail.history(KEY, mid)
    assert [e.op for e in history] == ["delete", "tag", "update", "create"]
    update = history[2]
    assert update.before is not None and update.after is not None
    assert (update.before["content"], update.after["content"]) == ("用户喜欢猫", "用户喜欢狗")
    assert update.changed_fields() == ["content"]
    assert history[1].changed_fields() == ["tags"]


async def test_history_is_bounded_per_memory_and_redacted_when_read(mem: Memory) -> None:
    mid = await write(mem, "token=abcdef123456 是部署口令")
    for i in range(6):
        await mem.memories.update(KEY, mid, importance=i + 2)
    rows = await changes(mem)
    assert len(rows) == 4  # trail.history_per_memory
    assert [r[3] for r in rows] == ["update"] * 4
    (newest, *_rest) = await mem.trail.history(KEY, mid)
    assert newest.after is not None and "abcdef123456" not in newest.after["content"]
    assert newest.actor == Actor("system")  # no surface named itself: the service's caller


async def test_the_cli_extraction_and_import_name_themselves(db_dsn: str, tmp_path: Path) -> None:
    with StubEmbeddingServer(dim=64) as server, ScriptedLLM() as llm:
        async with memory_on(
            db_dsn,
            tmp_path / "new",
            embedding__protocol="ollama-embed",
            embedding__model_url=server.url,
            embedding__model_name="bge-m3",
            embedding__max_retries=0,
            extraction__enabled=True,
            llm__base_url=llm.base_url,
            llm__model="stub-model",
        ) as mem:
            with acting(Actor("person", "cli:ops")):
                await mem.memories.add(
                    partition_key=KEY, scope="user", content="手工", source="user"
                )
            await mem.activity.record_user_message(
                session_key=KEY, user_key=KEY, user_id="10001", group_id=None, text="以后叫我小宋"
            )
            llm.say(json.dumps({"memories": [{"category": "preference", "content": "用户叫小宋", "importance": 6}]}, ensure_ascii=False))  # fmt: skip
            assert (await mem.extractor.extract(KEY)).status == "ok"
            old = build_old_install(
                tmp_path / "bot", fingerprint=None, vector_of=lambda t: [0.1] * 64
            )
            await import_legacy(mem.store, old.data_dir)
            kinds = {
                (r["actor_kind"], r["actor_id"], r["op"])
                for r in await mem.pool.fetch(
                    "SELECT actor_kind, actor_id, op FROM amrita_memory.memory_change"
                )
            }
    assert ("person", "cli:ops", "create") in kinds
    assert ("extraction", KEY, "create") in kinds
    assert ("import", "legacy", "create") in kinds


async def test_the_l3_loop_merge_is_recorded_as_the_cycles(db_dsn: str, tmp_path: Path) -> None:
    with ScriptedLLM() as llm:
        async with loop_memory(db_dsn, tmp_path, llm) as mem:
            target = "QQPlatform_Private_10001"
            ids = [
                (await mem.memories.add(partition_key=target, scope="user", content=c)).id
                for c in ("用户喜欢咖啡", "用户喜欢咖啡。")
            ]
            ctx = ToolContext(
                platform="l3", user_id="10001", cycle=CycleContext(cycle_id=7, target_key=target)
            )
            reply = json.loads(
                await mem.registries["consolidation"].call(
                    "subconscious_merge_memories",
                    {"keep_id": ids[0], "merge_ids": [ids[1]], "content": "用户爱喝咖啡"},
                    ctx,
                )
            )
            assert reply["status"] == "success", reply
            rows = await changes(mem, target)
    assert rows[2:] == [
        (ids[0], "l3", f"cycle 7 · {target}", "merge"),
        (ids[1], "l3", f"cycle 7 · {target}", "merge"),
    ]


# ---------------------------------------------------------------- pause


async def test_a_paused_partition_is_kept_but_not_recalled_injected_or_written_by_the_llm(
    mem: Memory,
) -> None:
    cat = await write(mem, "用户喜欢猫")
    await mem.memories.add(partition_key=GLOBAL_KEY, scope="global", content="全局规则：礼貌")
    assert "用户喜欢猫" in await mem.memory_block(ALICE)
    await mem.trail.flush()

    assert "已暂停" in await run(mem, ROOT, "pause user")
    assert "未知选项" in await run(mem, ALICE, "pause user")  # superusers only

    paused = await mem.trail.state(ROOT.personal_key)
    assert paused is not None and paused.paused_by == "person:99999"
    assert await run(mem, ROOT, "resume user") == f"▶ 已恢复 {ROOT.personal_key} 的记忆"
    # an old-style key is the partition it is now, and the reply names it
    assert await run(mem, ROOT, "pause user_424242") == (
        "⏸ 已暂停 QQPlatform_Private_424242 的记忆：保留不删除，但不再注入、不再检索，自动流程不再写入"
    )
    assert await mem.trail.state("QQPlatform_Private_424242") is not None
    assert await mem.trail.state("user_424242") is None
    await run(mem, ROOT, "resume user_424242")
    await mem.trail.pause(KEY, by="person:99999")

    read = await call(mem, "read_memory", {"query": "猫", "scope": "user"}, ALICE)
    assert read["status"] == "paused" and KEY in read["message"]
    listed = await call(mem, "list_memory", {"scope": "user"}, ALICE)
    assert listed["status"] == "paused"
    assert "已暂停" in await run(mem, ALICE, "user search 猫")
    block = await mem.memory_block(ALICE)
    assert "用户喜欢猫" not in block and "全局规则：礼貌" in block  # global is not paused
    refused = await call(
        mem,
        "write_memory",
        {"content": "用户喜欢狗", "tags": "", "importance": "low", "scope": "user"},
        ALICE,
    )
    assert refused["status"] == "error" and refused.get("paused") is True
    deleted = await call(mem, "delete_memory", {"id": cat, "scope": "user"}, ALICE)
    assert deleted["status"] == "error" and "暂停" in deleted["message"]
    with acting(Actor("l3", "cycle 1")), pytest.raises(MemoryPaused):
        await mem.memories.update(KEY, cat, importance=9)
    # kept, and a person still manages it
    assert [r.content for r in (await mem.memories.list_page(KEY, limit=10))[0]] == ["用户喜欢猫"]
    assert "手动条目" in await run(mem, ALICE, "user add 我的生日是五月一日")
    assert [r["surface"] for r in await accesses(mem)] == ["inject"]  # only the turn before

    assert await mem.trail.resume(KEY)
    assert "用户喜欢猫" in await mem.memory_block(ALICE)
    assert (await call(mem, "read_memory", {"query": "猫", "scope": "user"}, ALICE))["ids"][0]


async def test_the_scheduler_skips_a_paused_target_without_a_cycle_or_a_model_call(
    db_dsn: str, tmp_path: Path
) -> None:
    with ScriptedLLM() as llm:
        async with loop_memory(db_dsn, tmp_path, llm) as mem:
            target = "QQPlatform_Private_10001"
            await mem.trail.pause(target, by="person:root")
            summary, planned = await mem.scheduling.run_cycle(target)
            assert summary.ok and summary.cycle_id == 0 and "paused" in (summary.summary or "")
            assert planned is not None  # the next window is still planned
            assert llm.requests == []
            cycles = await mem.pool.fetchval(
                "SELECT count(*) FROM amrita_memory.consolidation_cycle WHERE target_key = $1",
                target,
            )
            assert cycles == 0


async def test_extraction_of_a_paused_scope_is_rejected_and_marks_the_lines_read(
    db_dsn: str, tmp_path: Path
) -> None:
    with ScriptedLLM() as llm:
        async with memory_on(
            db_dsn,
            tmp_path,
            extraction__enabled=True,
            llm__base_url=llm.base_url,
            llm__model="stub-model",
        ) as mem:
            await mem.activity.record_user_message(
                session_key=KEY, user_key=KEY, user_id="10001", group_id=None, text="记住我叫小宋"
            )
            await mem.trail.pause(KEY, by="person:root")
            outcome = await mem.extractor.extract(KEY)
            assert outcome.status == "rejected" and "paused" in (outcome.reason or "")
            assert llm.requests == []  # the model was never asked
            assert await mem.memories.count(KEY) == 0
            assert (await mem.extractor.extract(KEY)).status == "empty"


# ---------------------------------------------------------------- inspector


async def test_the_inspector_shows_exactly_the_block_the_hook_injects(mem: Memory) -> None:
    await write(mem, "用户喜欢猫")
    await write(mem, "群里约定周五聚餐", ALICE_IN_GROUP, scope="group")
    await mem.memories.add(partition_key=GLOBAL_KEY, scope="global", content="全局规则：礼貌")
    await mem.bot_memories.load(GROUP, KEY, "10001")

    seen = await mem.inspect(GROUP, user_id="10001")
    assert seen.text == await mem.memory_block(ALICE_IN_GROUP)
    await mem.trail.flush()
    assert [(m.partition_key, m.line.split("] ", 1)[1]) for m in seen.injected] == [
        (GLOBAL_KEY, "全局规则：礼貌"),
        (GROUP, "群里约定周五聚餐"),
        (KEY, "用户喜欢猫"),
    ]
    count = mem.bot_memories.count
    assert [m.tokens for m in seen.injected] == [count(m.line) for m in seen.injected]
    assert seen.lines_tokens == sum(m.tokens for m in seen.injected)
    assert seen.tokens == count(seen.text) and KEY in seen.loaded
    # inspecting is not a recall; the hook's turn is
    before = await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory_access")
    await inspect_chat(mem.bot_memories, GROUP, user_id="10001")
    assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory_access") == before

    await mem.trail.pause(GROUP, by="person:root")
    paused = await mem.inspect(GROUP, user_id="10001")
    assert paused.paused == [GROUP] and "群里约定周五聚餐" not in paused.text
    assert paused.text == await mem.memory_block(ALICE_IN_GROUP)
    assert "paused (left out): " + GROUP in paused.render()
    # a paused scope loaded into the chat is left out by the same one query
    await mem.trail.pause(KEY, by="person:root")
    both = await mem.inspect(GROUP, user_id="10001")
    assert sorted(both.paused) == sorted([GROUP, KEY]) and KEY not in both.loaded
    assert "用户喜欢猫" not in both.text and "全局规则：礼貌" in both.text


async def test_the_cli_pauses_inspects_and_shows_a_memorys_trail(
    db_dsn: str, tmp_path: Path
) -> None:
    env = {
        "DATABASE_URL": db_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
        "AMRITA_MEMORY_INJECTION__ENABLED": "true",
    }
    added = run_cli("memory", "add", KEY, "用户喜欢猫", env=env)
    assert added.returncode == 0, added.stderr
    seen = run_cli("inspect", KEY, env=env)
    assert seen.returncode == 0, seen.stderr
    assert "1 injected" in seen.stdout and "- [个人][5] 用户喜欢猫" in seen.stdout
    assert run_cli("pause", KEY, "--reason", "排查", env=env).stdout.strip() == f"paused {KEY}"
    listed = run_cli("paused", env=env).stdout
    assert KEY in listed and "(排查)" in listed and "by person:cli:" in listed
    assert "paused (left out): " + KEY in run_cli("inspect", KEY, env=env).stdout
    assert run_cli("resume", KEY, env=env).stdout.strip() == f"resumed {KEY}"

    conn = await asyncpg.connect(db_dsn)
    try:
        mid = await conn.fetchval(
            "SELECT id FROM amrita_memory.memory WHERE partition_key = $1", KEY
        )
        actor = await conn.fetchval(
            "SELECT actor_kind || ':' || actor_id FROM amrita_memory.memory_change "
            "WHERE memory_id = $1",
            mid,
        )
    finally:
        await conn.close()
    assert actor.startswith("person:cli:")
    history = run_cli("memory", "history", KEY, mid, env=env)
    assert history.returncode == 0 and "create person:cli:" in history.stdout
    assert "1 changes" in history.stdout
    recalls = run_cli("memory", "accesses", KEY, mid, env=env)
    assert recalls.returncode == 0 and "0 recalls" in recalls.stdout  # inspecting is no recall


async def test_the_access_log_follows_its_memory_through_a_key_change_and_a_delete(
    mem: Memory,
) -> None:
    cat = await write(mem, "用户喜欢猫")
    await call(mem, "read_memory", {"query": "猫", "scope": "user"}, ALICE)
    renamed = "QQPlatform_Private_77777"
    await mem.pool.execute(
        "UPDATE amrita_memory.memory SET partition_key = $1 WHERE id = $2", renamed, cat
    )
    assert await accesses(mem) == [] and len(await accesses(mem, renamed)) == 1
    await mem.pool.execute("DELETE FROM amrita_memory.memory WHERE id = $1", cat)
    assert await accesses(mem, renamed) == []
