"""User profiles end to end on real PostgreSQL: the tools (chat and L3 loop), history and
revert, concurrency, bad input, memory_block, backup round trip and key migration."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.domain.errors import ProfileRefused
from amrita_memory_pg.domain.profile import ProfileActor, make_edit
from amrita_memory_pg.maintenance.backup import create_backup
from amrita_memory_pg.maintenance.keys import migrate_keys
from amrita_memory_pg.maintenance.restore import restore_backup
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import CycleContext, ToolContext
from amrita_memory_pg.tools.profile import NOT_IN_CYCLE, READ_REFUSED
from tests.support.memory import memory_on
from tests.support.pg import PgServer

ALICE_KEY = "QQPlatform_Private_10001"
ALICE = ToolContext(platform="qq", user_id="10001")
ALICE_IN_GROUP = ToolContext(platform="qq", user_id="10001", group_id="555")
BOB_IN_GROUP = ToolContext(platform="qq", user_id="20002", group_id="555")
CLI = ProfileActor("cli", "tester")


def loop_ctx(target: str = ALICE_KEY, cycle_id: int = 7, *, dry_run: bool = False) -> ToolContext:
    return ToolContext(
        platform="qq",
        user_id="10001",
        cycle=CycleContext(cycle_id=cycle_id, target_key=target, dry_run=dry_run),
    )


@pytest.fixture
async def mem(db_dsn: str, tmp_path: Path) -> AsyncIterator[Memory]:
    async with memory_on(
        db_dsn,
        tmp_path,
        subconscious__enabled=True,
        profile__history_keep=4,
        profile__line_max_chars=50,
        profile__max_lines=6,
        profile__summary_max_chars=60,
    ) as memory:
        yield memory


async def loop_call(mem: Memory, name: str, args: dict[str, Any], ctx: ToolContext) -> Any:
    return json.loads(await mem.registries["consolidation"].call(name, args, ctx))


async def chat_call(mem: Memory, args: dict[str, Any], ctx: ToolContext) -> Any:
    return json.loads(await mem.call_tool("read_profile", args, ctx))


async def table_state(mem: Memory) -> tuple[Any, ...]:
    """Everything stored about profiles, to prove a refusal wrote nothing."""
    profiles = await mem.pool.fetch(
        "SELECT partition_key, summary, lines, version FROM amrita_memory.profile ORDER BY 1"
    )
    history = await mem.pool.fetch(
        "SELECT partition_key, version FROM amrita_memory.profile_history ORDER BY 1, 2"
    )
    return tuple(tuple(r) for r in profiles), tuple(tuple(r) for r in history)


async def test_the_b2_sequence_through_the_loop_tools_gives_the_intended_profile(
    mem: Memory,
) -> None:
    ctx = loop_ctx()
    steps: list[dict[str, Any]] = [
        {"summary": "S", "new_lines": "L1\nL2"},
        {"summary": "S", "new_lines": "L3"},
        {"summary": "S", "new_lines": "X", "start_line": 0, "end_line": 1},
    ]
    for step in steps:
        reply = await loop_call(mem, "subconscious_update_profile", step, ctx)
        assert reply["status"] == "success" and reply["message"] == "画像增量更新成功", reply
    read = await loop_call(mem, "subconscious_get_profile", {}, ctx)
    assert read == {
        "status": "success",
        "summary": "S",
        "content": "X\nL2\nL3",
        "total_lines": 3,
        "range_start": 0,
        "range_end": 3,
    }
    window = await loop_call(mem, "subconscious_get_profile", {"start_line": 0, "end_line": 1}, ctx)
    assert window["content"] == "X"
    stored = await mem.pool.fetchrow(
        "SELECT lines, version FROM amrita_memory.profile WHERE partition_key = $1", ALICE_KEY
    )
    assert stored is not None and list(stored["lines"]) == ["X", "L2", "L3"]
    history = await mem.profiles.history(ALICE_KEY)
    assert [(c.version, c.actor_kind, c.cycle_id, c.operation) for c in history] == [
        (3, "loop", 7, "replace [0:1] -> [0:1]"),
        (2, "loop", 7, "append 1 lines at 2"),
        (1, "loop", 7, "append 2 lines at 0"),
    ]
    # a real delete, then an insert
    await loop_call(
        mem,
        "subconscious_update_profile",
        {"summary": "S", "new_lines": "", "start_line": 1, "end_line": 2},
        ctx,
    )
    await loop_call(
        mem,
        "subconscious_update_profile",
        {"summary": "S2", "new_lines": "Y", "start_line": 0, "end_line": 0},
        ctx,
    )
    read = await loop_call(mem, "subconscious_get_profile", {}, ctx)
    assert (read["summary"], read["content"]) == ("S2", "Y\nX\nL3")


async def test_read_profile_is_the_speakers_own_in_any_chat_and_refuses_others(
    mem: Memory,
) -> None:
    empty = await chat_call(mem, {}, ALICE)
    assert empty == {
        "status": "success",
        "summary": "",
        "content": "",
        "total_lines": 0,
        "range_start": 0,
        "range_end": 0,
    }
    await mem.profiles.edit(ALICE_KEY, make_edit("爱猫", "养了一只橘猫\n住在杭州", None, None), CLI)
    for ctx in (ALICE, ALICE_IN_GROUP):
        for args in ({}, {"user_id": "10001"}, {"user_id": 10001}):
            reply = await chat_call(mem, args, ctx)
            assert (reply["summary"], reply["total_lines"]) == ("爱猫", 2), (ctx, args)
    window = await chat_call(mem, {"start_line": 1, "end_line": 5}, ALICE_IN_GROUP)
    assert (window["content"], window["range_start"], window["range_end"]) == ("住在杭州", 1, 2)

    # Bob asks for Alice's profile, which exists, and for Carol's, which does not: the
    # same refusal, nothing of Alice in it.
    refused = {"status": "error", "message": READ_REFUSED}
    assert await chat_call(mem, {"user_id": "10001"}, BOB_IN_GROUP) == refused
    assert await chat_call(mem, {"user_id": "30003"}, BOB_IN_GROUP) == refused
    # Bob's own is empty
    assert (await chat_call(mem, {}, BOB_IN_GROUP))["summary"] == ""


async def test_loop_tools_need_a_cycle_and_a_personal_target(mem: Memory) -> None:
    before = await table_state(mem)
    for name, args in (
        ("subconscious_get_profile", {}),
        ("subconscious_update_profile", {"summary": "S", "new_lines": "x"}),
    ):
        no_cycle = await loop_call(mem, name, args, ALICE)
        assert no_cycle == {"status": "error", "message": NOT_IN_CYCLE}
        group = await loop_call(mem, name, args, loop_ctx("QQPlatform_Group_555"))
        assert group["status"] == "error" and "群没有画像" in group["message"], group
    assert await table_state(mem) == before


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"summary": "S", "new_lines": "x", "start_line": 0, "end_line": 9}, "当前共 2 行"),
        ({"summary": "S", "new_lines": "x", "start_line": 3, "end_line": 3}, "当前共 2 行"),
        ({"summary": "S", "new_lines": "x", "start_line": 1}, "要么都提供"),
        ({"summary": "S", "new_lines": "x", "start_line": -1, "end_line": 1}, "不能为负数"),
        ({"summary": "S", "new_lines": "x", "start_line": 2, "end_line": 1}, "不能小于"),
        ({"summary": "", "new_lines": "x"}, "summary 不能为空"),
        ({"summary": "长" * 61, "new_lines": "x"}, "summary 过长（61 字符，上限 60）"),
        ({"summary": "S", "new_lines": "ok\n" + "x" * 51}, "new_lines 的第 1 行过长"),
        ({"summary": "S", "new_lines": "a\nb\nc\nd\ne"}, "画像将有 7 行，超过上限 6 行"),
        ({"summary": "S", "new_lines": "a\x00b"}, "NUL"),
        ({"summary": "S\ud800", "new_lines": "a"}, "代理字符"),
        ({"new_lines": "a"}, "必须带有 summary 参数"),
        ({"summary": "S", "new_lines": "a", "start_line": 2**63, "end_line": 1}, "64 位"),
    ],
)
async def test_bad_updates_are_refused_with_a_clear_message_and_write_nothing(
    mem: Memory, args: dict[str, Any], fragment: str
) -> None:
    ctx = loop_ctx()
    ok = await loop_call(
        mem, "subconscious_update_profile", {"summary": "S", "new_lines": "a\nb"}, ctx
    )
    assert ok["status"] == "success"
    before = await table_state(mem)
    reply = await loop_call(mem, "subconscious_update_profile", args, ctx)
    assert reply["status"] == "error" and fragment in reply["message"], reply
    assert await table_state(mem) == before


async def test_a_dry_run_cycle_checks_but_writes_nothing(mem: Memory) -> None:
    before = await table_state(mem)
    reply = await loop_call(
        mem,
        "subconscious_update_profile",
        {"summary": "S", "new_lines": "x"},
        loop_ctx(dry_run=True),
    )
    assert reply["status"] == "success" and reply["dry_run"] is True, reply
    assert await table_state(mem) == before


async def test_concurrent_edits_lose_no_line(mem: Memory) -> None:
    """Twelve appends and six inserts at line 0 at once, from separate connections: every
    line arrives (the compare-and-set retries on the new content), versions are 1..18."""
    service = mem.profiles
    caps = {"summary_max_chars": 60, "line_max_chars": 50, "max_lines": 100}
    service.limits = service.settings.model_copy(update=caps)  # room for every line

    async def append(i: int) -> None:
        await service.edit(ALICE_KEY, make_edit("S", f"a{i}", None, None), CLI)

    async def insert(i: int) -> None:
        await service.edit(ALICE_KEY, make_edit("S", f"i{i}", 0, 0), CLI)

    await asyncio.gather(*(append(i) for i in range(12)), *(insert(i) for i in range(6)))
    profile = await service.get(ALICE_KEY)
    assert sorted(profile.lines) == sorted(
        [f"a{i}" for i in range(12)] + [f"i{i}" for i in range(6)]
    )
    assert profile.version == 18
    appended = [line for line in profile.lines if line.startswith("a")]
    assert profile.lines[-12:] == tuple(appended)  # every append went after the inserts' lines
    versions = await mem.pool.fetch(
        "SELECT version FROM amrita_memory.profile_history WHERE partition_key = $1 ORDER BY 1",
        ALICE_KEY,
    )
    assert [r["version"] for r in versions] == [15, 16, 17, 18]  # history_keep = 4


async def test_history_is_bounded_and_a_bad_rewrite_can_be_reverted(mem: Memory) -> None:
    service = mem.profiles
    for i in range(1, 6):
        await service.edit(
            ALICE_KEY, make_edit(f"S{i}", f"line {i}", None, None), ProfileActor("loop", cycle_id=i)
        )
    # v6: a bad rewrite that replaces everything
    await service.edit(
        ALICE_KEY, make_edit("坏的摘要", "胡说八道", 0, 5), ProfileActor("loop", cycle_id=9)
    )
    history = await service.history(ALICE_KEY)
    assert [c.version for c in history] == [6, 5, 4, 3]
    change = await service.change(ALICE_KEY, 6)
    assert change is not None
    assert change.old_lines == tuple(f"line {i}" for i in range(1, 6))
    assert (change.new_summary, change.new_lines, change.cycle_id) == ("坏的摘要", ("胡说八道",), 9)

    result = await service.revert(ALICE_KEY, 5, CLI)
    assert result.changed and result.profile.version == 7
    restored = await service.get(ALICE_KEY)
    assert (restored.summary, restored.lines) == ("S5", tuple(f"line {i}" for i in range(1, 6)))
    newest = (await service.history(ALICE_KEY, 1))[0]
    assert (newest.operation, newest.actor_kind, newest.actor) == ("revert to v5", "cli", "tester")
    # kept now: v7..v4; v3 is the old content of v4, v2 is gone
    assert (await service.revert(ALICE_KEY, 3, CLI)).profile.lines == ("line 1", "line 2", "line 3")
    before = await table_state(mem)
    with pytest.raises(ProfileRefused, match="已没有 v2"):
        await service.revert(ALICE_KEY, 2, CLI)
    with pytest.raises(ProfileRefused, match="没有 v99"):
        await service.revert(ALICE_KEY, 99, CLI)
    assert await table_state(mem) == before


async def test_revert_to_zero_empties_a_new_profile(mem: Memory) -> None:
    await mem.profiles.edit(ALICE_KEY, make_edit("S", "x", None, None), CLI)
    result = await mem.profiles.revert(ALICE_KEY, 0, CLI)
    assert result.changed and result.profile.empty and result.profile.version == 2


async def test_memory_block_can_include_the_profile_summary_in_one_round_trip(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as off:
        await off.profiles.edit(ALICE_KEY, make_edit("喜欢猫的学生", "x", None, None), CLI)
        await off.memos.replace(ALICE_KEY, "备忘：下周考试")
        block = await off.memory_block(ALICE)
        assert "备忘：下周考试" in block and "喜欢猫的学生" not in block  # off by default
    async with memory_on(db_dsn, tmp_path, profile__inject_summary=True) as on:
        calls: list[str] = []

        class Counting:
            """The pool, counting the statements sent through it."""

            def __init__(self, pool: Any) -> None:
                self.pool = pool

            def __getattr__(self, name: str) -> Any:
                calls.append(name)
                return getattr(self.pool, name)

        counting = Counting(on.pool)
        on.memos._pool = counting
        on.profiles.repo._pool = counting
        on.bot_memories.repo._pool = counting  # the block's one query
        block = await on.memory_block(ALICE_IN_GROUP)
        assert "<PROFILE>\n喜欢猫的学生\n</PROFILE>" in block and "备忘：下周考试" not in block
        block = await on.memory_block(ALICE)
        assert block.index("备忘：下周考试") < block.index("喜欢猫的学生")
        assert calls == ["fetch", "fetch"]  # one statement per turn
        assert "喜欢猫的学生" not in await on.memory_block(BOB_IN_GROUP)


async def checksum(mem: Memory) -> tuple[Any, ...]:
    rows = await mem.pool.fetch(
        "SELECT partition_key, summary, lines, version, updated_at FROM amrita_memory.profile ORDER BY 1"
    )
    history = await mem.pool.fetch(
        "SELECT * FROM amrita_memory.profile_history ORDER BY partition_key, version"
    )
    return tuple(tuple(r) for r in rows), tuple(tuple(r) for r in history)


async def test_backup_then_restore_keeps_profiles_and_their_history(
    db_dsn: str, pg_server: PgServer, template_db: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await mem.profiles.edit(ALICE_KEY, make_edit("S", "a\n\nb", None, None), CLI)
        await mem.profiles.edit(
            ALICE_KEY, make_edit("S2", "c", 1, 2), ProfileActor("loop", cycle_id=3)
        )
        await mem.profiles.edit(
            "QQPlatform_Private_20002", make_edit("换行\n摘要", "'; --", None, None), CLI
        )
        await mem.memories.add(partition_key=ALICE_KEY, scope="user", content="一条记忆")
        original = await checksum(mem)
        info = await create_backup(mem.store)
    assert info.counts["profile"] == 2 and info.counts["profile_history"] == 3
    for source in (info.jsonl_path, info.dump_path):
        name = await pg_server.create_database(template=template_db)
        try:
            async with memory_on(pg_server.dsn(name), tmp_path / source.suffix) as fresh:
                await fresh.profiles.edit(ALICE_KEY, make_edit("会被替换", "x", None, None), CLI)
                report = await restore_backup(fresh.store, source)
                assert report.counts["profile"] == 2, source.suffix
                assert await checksum(fresh) == original, source.suffix
                # and it keeps working: the next change is v3 of Alice's
                result = await fresh.profiles.edit(ALICE_KEY, make_edit("S3", "", None, None), CLI)
                assert result.profile.version == 3
        finally:
            await pg_server.drop_database(name)


async def test_key_migration_moves_a_profile_with_its_history(mem: Memory) -> None:
    legacy, current = "user_10001", ALICE_KEY
    await mem.profiles.edit(legacy, make_edit("旧键的画像", "a", None, None), CLI)
    await mem.profiles.edit(legacy, make_edit("旧键的画像", "b", None, None), CLI)
    # a legacy and a current profile of the same user: a conflict, both left alone
    await mem.profiles.edit("user_20002", make_edit("旧", "x", None, None), CLI)
    await mem.profiles.edit("QQPlatform_Private_20002", make_edit("新", "y", None, None), CLI)

    dry = await migrate_keys(mem.pool, dry_run=True)
    assert (dry.profiles_changed, dry.profile_conflicts) == (1, ["user_20002"])
    assert (await mem.profiles.get(legacy)).version == 2

    report = await migrate_keys(mem.pool)
    assert report.profiles_changed == 1 and report.mapping[legacy] == current
    moved = await mem.profiles.get(current)
    assert (moved.summary, moved.lines, moved.version) == ("旧键的画像", ("a", "b"), 2)
    assert (await mem.profiles.get(legacy)).version == 0
    assert [c.version for c in await mem.profiles.history(current)] == [2, 1]
    assert (await mem.profiles.get("QQPlatform_Private_20002")).summary == "新"
    assert (await mem.profiles.get("user_20002")).summary == "旧"
    assert (await migrate_keys(mem.pool)).profiles_changed == 0
