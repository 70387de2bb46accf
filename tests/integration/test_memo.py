"""L1 memo: the store, the three tools' exact replies, the cap under concurrency, and the
per-turn memory block — all on the real embedded PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.errors import MemoTooLong
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.tools.context import ToolContext

ALICE = ToolContext(platform="qq", user_id="10001")
ALICE_IN_GROUP = ToolContext(platform="qq", user_id="10001", group_id="20002")
BOB_IN_GROUP = ToolContext(platform="qq", user_id="10002", group_id="20002")


def _settings(db_dsn: str, tmp_path: Path, **overrides: object) -> Settings:
    return load_settings(
        env={},
        read_default_files=False,
        overrides={
            "database.url": db_dsn,
            "data_dir": str(tmp_path / "data"),
            "embedding.protocol": "hash",
            **overrides,
        },
    )


@pytest.fixture
async def mem(settings: Settings) -> AsyncIterator[Memory]:
    async with open_memory(settings) as memory:
        yield memory


async def call(mem: Memory, tool: str, args: dict[str, object], ctx: ToolContext) -> object:
    return json.loads(await mem.call_tool(tool, args, ctx))


async def test_read_memo_of_an_empty_partition(mem: Memory) -> None:
    reply = await mem.call_tool("read_memo", {}, ALICE)
    assert reply == json.dumps(
        {"status": "success", "memo": "", "chars": 0, "empty": True}, ensure_ascii=False, indent=4
    )


async def test_append_joins_with_a_newline_and_strips_the_addition(mem: Memory) -> None:
    assert await call(mem, "append_memo", {"content": "  喜欢猫 \n"}, ALICE) == {
        "status": "success",
        "message": "备忘录已追加",
        "chars": 3,
        "appended": 3,
    }
    assert await call(mem, "append_memo", {"content": "住在杭州"}, ALICE) == {
        "status": "success",
        "message": "备忘录已追加",
        "chars": 8,
        "appended": 4,
    }
    assert await call(mem, "read_memo", {}, ALICE) == {
        "status": "success",
        "memo": "喜欢猫\n住在杭州",
        "chars": 8,
        "empty": False,
    }
    memo = await mem.memos.get(ALICE.personal_key)
    assert memo.version == 2


async def test_append_refuses_empty_and_missing_content(mem: Memory) -> None:
    assert await call(mem, "append_memo", {"content": "  \n "}, ALICE) == {
        "status": "error",
        "message": "追加内容为空",
    }
    assert await call(mem, "append_memo", {}, ALICE) == {
        "status": "error",
        "message": "调用 append_memo 工具必须带有 content 参数",
    }
    assert await call(mem, "update_memo", {"content": None}, ALICE) == {
        "status": "error",
        "message": "调用 update_memo 工具必须带有 content 参数",
    }


async def test_update_replaces_without_stripping_and_empty_clears(mem: Memory) -> None:
    assert await call(mem, "update_memo", {"content": " 身份：学生 "}, ALICE) == {
        "status": "success",
        "message": "备忘录已更新",
        "chars": 7,
    }
    assert (await mem.memos.get(ALICE.personal_key)).content == " 身份：学生 "
    assert await call(mem, "update_memo", {"content": ""}, ALICE) == {
        "status": "success",
        "message": "备忘录已更新",
        "chars": 0,
    }
    assert await mem.memory_block(ALICE) == ""
    assert (await mem.memos.get(ALICE.personal_key)).version == 2


async def test_refused_writes_keep_the_old_memo_and_say_both_lengths(
    db_dsn: str, tmp_path: Path
) -> None:
    async with open_memory(_settings(db_dsn, tmp_path, memo_max_chars=100)) as mem:
        await call(mem, "update_memo", {"content": "a" * 95}, ALICE)
        assert await call(mem, "append_memo", {"content": "bcdef"}, ALICE) == {
            "status": "error",
            "message": "备忘录长度 101 超过上限 100，请压缩后重试（当前备忘录 95 字，上限 100 字）",
            "current_chars": 95,
            "max_chars": 100,
        }
        assert await call(mem, "update_memo", {"content": "猫" * 101}, ALICE) == {
            "status": "error",
            "message": "备忘录长度 101 超过上限 100，请压缩后重试（当前备忘录 95 字，上限 100 字）",
            "current_chars": 95,
            "max_chars": 100,
        }
        memo = await mem.memos.get(ALICE.personal_key)
        assert (memo.content, memo.version) == ("a" * 95, 1)
        # exactly at the cap is accepted (characters, not bytes)
        assert await call(mem, "update_memo", {"content": "猫" * 100}, ALICE) == {
            "status": "success",
            "message": "备忘录已更新",
            "chars": 100,
        }


async def test_an_addition_longer_than_the_cap_is_refused_on_an_empty_memo(
    db_dsn: str, tmp_path: Path
) -> None:
    async with open_memory(_settings(db_dsn, tmp_path, memo_max_chars=100)) as mem:
        with pytest.raises(MemoTooLong) as err:
            await mem.memos.append(ALICE.personal_key, "x" * 101)
        assert (err.value.length, err.value.limit, err.value.current_chars) == (101, 100, 0)
        assert (await mem.memos.get(ALICE.personal_key)).version == 0


async def test_fifty_concurrent_appends_lose_nothing_and_hold_the_cap_exactly(
    db_dsn: str, tmp_path: Path
) -> None:
    settings = _settings(
        db_dsn,
        tmp_path,
        memo_max_chars=100,
        **{"database.pool_min_size": 50, "database.pool_max_size": 50},
    )
    async with open_memory(settings) as mem:
        # 9 characters each: the first takes 9, every later one 10 (newline) → 10 fit in 100
        lines = [f"line-{i:04d}" for i in range(50)]
        assert all(len(line) == 9 for line in lines)
        replies = await asyncio.gather(
            *(mem.call_tool("append_memo", {"content": line}, ALICE) for line in lines)
        )
        results = [json.loads(r) for r in replies]
        accepted = [
            line for line, r in zip(lines, results, strict=True) if r["status"] == "success"
        ]
        refused = [r for r in results if r["status"] == "error"]
        assert len(accepted) == 10
        assert len(refused) == 40
        assert all(r["message"].startswith("备忘录长度 109 超过上限 100") for r in refused)
        memo = await mem.memos.get(ALICE.personal_key)
        assert memo.chars == 99
        assert sorted(memo.content.split("\n")) == sorted(accepted)
        assert memo.version == 10
        assert sorted(r["chars"] for r in results if r["status"] == "success") == [
            9 + 10 * k for k in range(10)
        ]


async def test_fifty_concurrent_appends_under_the_cap_all_land(db_dsn: str, tmp_path: Path) -> None:
    settings = _settings(
        db_dsn, tmp_path, **{"database.pool_min_size": 50, "database.pool_max_size": 50}
    )
    async with open_memory(settings) as mem:
        lines = [f"事实{i}" for i in range(50)]
        await asyncio.gather(*(mem.memos.append(ALICE.session_key, line) for line in lines))
        memo = await mem.memos.get(ALICE.session_key)
        assert sorted(memo.content.split("\n")) == sorted(lines)
        assert memo.version == 50


async def test_memo_tools_use_the_group_memo_in_a_group(mem: Memory) -> None:
    await call(mem, "update_memo", {"content": "本群是读书会"}, ALICE_IN_GROUP)
    await call(mem, "update_memo", {"content": "Alice 是学生"}, ALICE)
    assert (await call(mem, "read_memo", {}, BOB_IN_GROUP))["memo"] == "本群是读书会"  # type: ignore[index]
    assert (await call(mem, "read_memo", {}, ALICE))["memo"] == "Alice 是学生"  # type: ignore[index]


async def test_memory_block_private_injects_the_personal_memo(mem: Memory) -> None:
    assert await mem.memory_block(ALICE) == ""
    await mem.memos.replace(ALICE.personal_key, "喜欢猫\n住在杭州")
    assert await mem.memory_block(ALICE) == (
        "以下是关于当前对话主体的备忘信息，位于<MEMO>块\n"
        "仅必要时可通过 update_memo 工具维护。\n"
        "<MEMO>\n喜欢猫\n住在杭州\n</MEMO>"
    )


async def test_memory_block_in_a_group_is_group_only_by_default(mem: Memory) -> None:
    await mem.memos.replace(ALICE.personal_key, "Alice 的私事")
    assert await mem.memory_block(ALICE_IN_GROUP) == ""
    await mem.memos.replace(ALICE_IN_GROUP.group_key or "", "本群是读书会")
    block = await mem.memory_block(ALICE_IN_GROUP)
    assert "<MEMO>\n本群是读书会\n</MEMO>" in block
    assert "Alice 的私事" not in block


async def test_memory_block_in_a_group_adds_the_speakers_memo_when_enabled(
    db_dsn: str, tmp_path: Path
) -> None:
    settings = _settings(db_dsn, tmp_path, memo_inject_personal_in_group=True)
    async with open_memory(settings) as mem:
        await mem.memos.replace(ALICE.personal_key, "Alice 是学生")
        only_personal = await mem.memory_block(ALICE_IN_GROUP)
        assert only_personal.startswith("以下是当前发言人（10001）的个人备忘信息")
        assert "<PERSONAL_MEMO>\nAlice 是学生\n</PERSONAL_MEMO>" in only_personal
        assert "<MEMO>" not in only_personal
        await mem.memos.replace(ALICE_IN_GROUP.group_key or "", "本群是读书会")
        both = await mem.memory_block(ALICE_IN_GROUP)
        group_part, personal_part = both.split("\n\n")
        assert group_part.endswith("<MEMO>\n本群是读书会\n</MEMO>")
        assert personal_part.endswith("<PERSONAL_MEMO>\nAlice 是学生\n</PERSONAL_MEMO>")
        # Bob speaks in the same group: Alice's personal memo is not his
        assert "Alice 是学生" not in await mem.memory_block(BOB_IN_GROUP)


async def test_chat_log_keeps_the_newest_lines_per_session(db_dsn: str, tmp_path: Path) -> None:
    async with open_memory(_settings(db_dsn, tmp_path, chat_log_keep=3)) as mem:
        key = ALICE_IN_GROUP.session_key
        for i in range(5):
            await mem.activity.record_user_message(
                session_key=key,
                user_key=ALICE.personal_key,
                user_id="10001",
                group_id="20002",
                text=f"消息{i}",
            )
        await mem.activity.record_bot_message(
            session_key=key, bot_id="bot", group_id="20002", text="回复"
        )
        lines = await mem.activity.recent(key)
        assert [(line.role, line.text) for line in lines] == [
            ("user", "消息3"),
            ("user", "消息4"),
            ("bot", "回复"),
        ]
        grid = await mem.activity.heatmap(ALICE.personal_key)
        assert sum(map(sum, grid)) == 5  # bot lines are not user activity


async def test_heatmap_cell_is_local_weekday_and_two_hour_slot(db_dsn: str, tmp_path: Path) -> None:
    async with open_memory(_settings(db_dsn, tmp_path)) as mem:
        # 2026-03-04 is a Wednesday; 18:30 UTC is Thursday 02:30 in Asia/Shanghai
        moment = datetime(2026, 3, 4, 18, 30, tzinfo=UTC)
        for _ in range(2):
            await mem.activity.record_user_message(
                session_key=ALICE.session_key,
                user_key=ALICE.personal_key,
                user_id="10001",
                group_id=None,
                text="晚安",
                now=moment,
            )
        grid = await mem.activity.heatmap(ALICE.personal_key)
        assert grid[3][1] == 2
        assert sum(map(sum, grid)) == 2


async def test_chat_log_off_still_counts_activity(db_dsn: str, tmp_path: Path) -> None:
    async with open_memory(_settings(db_dsn, tmp_path, chat_log_keep=0)) as mem:
        await mem.activity.record_user_message(
            session_key=ALICE.session_key,
            user_key=ALICE.personal_key,
            user_id="10001",
            group_id=None,
            text="hi",
        )
        assert await mem.activity.recent(ALICE.session_key) == []
        assert sum(map(sum, await mem.activity.heatmap(ALICE.personal_key))) == 1
