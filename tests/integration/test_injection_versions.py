"""The block query sends a chat's candidates only when their version changed (the
turn's p50): a held copy must never outlive a change to the data, whoever made it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from amrita_memory_pg.domain.keys import GLOBAL_KEY
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on

ALICE = ToolContext(platform="qq", user_id="10001")


@pytest.fixture
async def mem(db_dsn: str, tmp_path: Path) -> AsyncIterator[Memory]:
    async with memory_on(db_dsn, tmp_path, injection__enabled=True) as opened:
        await opened.memories.add(
            partition_key=ALICE.personal_key, scope="user", content="用户喜欢猫", importance=5
        )
        await opened.memories.add(partition_key=GLOBAL_KEY, scope="global", content="回答要礼貌")
        yield opened


async def rows_sent(mem: Memory, known: int | None) -> tuple[int | None, int]:
    rows = await mem.bot_memories.repo.block(
        memo_keys=[ALICE.session_key],
        chat_key=ALICE.session_key,
        scope_keys=[GLOBAL_KEY, ALICE.session_key],
        limit=200,
        known_version=known,
    )
    return rows.version, len(rows.memories)


async def test_an_unchanged_version_sends_no_candidates_and_the_block_is_the_same(
    mem: Memory,
) -> None:
    version, sent = await rows_sent(mem, None)
    assert version is not None and sent == 2
    assert await rows_sent(mem, version) == (version, 0)  # nothing sent again
    assert await rows_sent(mem, version + 1) == (version, 2)  # another version: all sent
    first = await mem.memory_block(ALICE)
    assert "用户喜欢猫" in first and "回答要礼貌" in first
    assert await mem.memory_block(ALICE) == first  # from the held copy


async def test_every_kind_of_change_reaches_the_next_turn(mem: Memory) -> None:
    assert "用户喜欢猫" in await mem.memory_block(ALICE)
    (cat,) = [r.id for r in (await mem.memories.list_page(ALICE.personal_key, limit=5))[0]]
    # a write through the service
    await mem.memories.add(partition_key=ALICE.personal_key, scope="user", content="用户住在杭州")
    assert "用户住在杭州" in await mem.memory_block(ALICE)
    # a change of content
    await mem.memories.update(ALICE.personal_key, cat, content="用户喜欢狗")
    block = await mem.memory_block(ALICE)
    assert "用户喜欢狗" in block and "用户喜欢猫" not in block
    # importance changed behind the service's back, updated_at untouched (as a sweep may)
    await mem.pool.execute(
        "UPDATE amrita_memory.memory SET importance = 9 WHERE partition_key = $1 AND id = $2",
        ALICE.personal_key,
        cat,
    )
    assert "[9] 用户喜欢狗" in await mem.memory_block(ALICE)
    # another process deletes (here: SQL), and a pause leaves the partition out
    await mem.pool.execute(
        "DELETE FROM amrita_memory.memory WHERE partition_key = $1 AND id = $2",
        ALICE.personal_key,
        cat,
    )
    assert "用户喜欢狗" not in await mem.memory_block(ALICE)
    await mem.trail.pause(ALICE.personal_key, by="person:root")
    block = await mem.memory_block(ALICE)
    assert "用户住在杭州" not in block and "回答要礼貌" in block
    await mem.trail.resume(ALICE.personal_key)
    assert "用户住在杭州" in await mem.memory_block(ALICE)
