"""The tiered sweep in SQL: reference decisions, the restart-clock choice, the cursor."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.records import Source
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings
from tests.support.data import bulk_insert
from tests.support.vectors import assert_index_in_step, indexed_ids

NOW = datetime(2026, 1, 31, tzinfo=UTC)
KEY = "QQPlatform_Private_10001"


async def add(
    mem: Memory, content: str, importance: int, age: timedelta, source: Source = "auto"
) -> str:
    rec = await mem.memories.add(
        partition_key=KEY,
        scope="user",
        content=content,
        importance=importance,
        source=source,
        now=NOW - age,
    )
    return rec.id


async def importance_of(mem: Memory, memory_id: str) -> int | None:
    value = await mem.pool.fetchval(
        "SELECT importance FROM amrita_memory.memory WHERE id = $1", memory_id
    )
    return None if value is None else int(value)


async def test_reference_decisions(memory: Memory) -> None:
    low_kept = await add(memory, "a", 3, timedelta(days=7))
    low_gone = await add(memory, "b", 3, timedelta(days=7, seconds=1))
    medium = await add(memory, "c", 5, timedelta(days=26))
    medium_kept = await add(memory, "d", 6, timedelta(days=25))
    high = await add(memory, "e", 9, timedelta(days=91))
    high_kept = await add(memory, "f", 8, timedelta(days=89))
    report = await memory.memories.sweep(now=NOW)
    assert (report.scanned, report.demoted, report.purged, report.kept) == (6, 2, 1, 3)
    assert await importance_of(memory, low_kept) == 3
    assert await importance_of(memory, low_gone) is None
    assert await importance_of(memory, medium) == 3
    assert await importance_of(memory, medium_kept) == 6
    assert await importance_of(memory, high) == 5
    assert await importance_of(memory, high_kept) == 8
    # The purged memory is gone from the vector index too, the others stay searchable.
    assert low_gone not in await assert_index_in_step(memory)
    assert len(await indexed_ids(memory)) == 5
    # vector mode: every row is a hit (hybrid cuts rows sharing nothing with "c")
    hits = await memory.memories.search(KEY, "c", top_k=10, now=NOW, mode="vector")
    assert {h.record.id for h in hits} == await indexed_ids(memory)


async def test_demotion_restarts_the_tier_clock(memory: Memory) -> None:
    mid = await add(memory, "旧的重要记忆", 8, timedelta(days=100))
    await memory.memories.sweep(now=NOW)
    assert await importance_of(memory, mid) == 5
    await memory.memories.sweep(now=NOW)  # same moment: a fresh lifetime in the medium tier
    assert await importance_of(memory, mid) == 5
    await memory.memories.sweep(now=NOW + timedelta(days=25, hours=3))  # > 25.0998 d
    assert await importance_of(memory, mid) == 3
    await memory.memories.sweep(now=NOW + timedelta(days=31))  # 5.9 d into the low tier
    assert await importance_of(memory, mid) == 3
    await memory.memories.sweep(now=NOW + timedelta(days=32, hours=4))  # > 7 d in the low tier
    assert await importance_of(memory, mid) is None
    assert await indexed_ids(memory) == set()


async def test_reference_clock_cascades_on_consecutive_sweeps(
    make_settings: Callable[..., Settings],
) -> None:
    async with open_memory(make_settings(**{"decay.restart_clock_on_demote": False})) as mem:
        mid = await add(mem, "旧的重要记忆", 8, timedelta(days=100))
        levels = []
        for _ in range(3):
            await mem.memories.sweep(now=NOW)
            levels.append(await importance_of(mem, mid))
        assert levels == [5, 3, None]
        assert await indexed_ids(mem) == set()


async def test_dry_run_changes_nothing(memory: Memory) -> None:
    await add(memory, "a", 3, timedelta(days=30))
    await add(memory, "b", 8, timedelta(days=300))
    await add(memory, "c", 5, timedelta(days=1))
    before = await memory.pool.fetch("SELECT id, importance FROM amrita_memory.memory ORDER BY id")
    cursor = await memory.pool.fetchval("SELECT cursor_key FROM amrita_memory.sweep_state")
    report = await memory.memories.sweep(now=NOW, dry_run=True)
    assert (report.scanned, report.demoted, report.purged, report.kept) == (3, 1, 1, 1)
    assert (
        await memory.pool.fetch("SELECT id, importance FROM amrita_memory.memory ORDER BY id")
        == before
    )
    assert await memory.pool.fetchval("SELECT cursor_key FROM amrita_memory.sweep_state") == cursor
    assert len(await assert_index_in_step(memory)) == 3


async def test_disabled_sweep_does_nothing_unless_forced(
    make_settings: Callable[..., Settings],
) -> None:
    async with open_memory(make_settings(**{"decay.sweep_enabled": False})) as mem:
        await add(mem, "a", 3, timedelta(days=30))
        report = await mem.memories.sweep(now=NOW)
        assert (report.scanned, report.purged) == (0, 0)
        report = await mem.memories.sweep(now=NOW, force=True)
        assert (report.scanned, report.purged) == (1, 1)


async def test_sweep_visits_every_row_of_a_10k_table_over_successive_runs(
    make_settings: Callable[..., Settings],
) -> None:
    """Unlike the reference (which rescans the same first N forever), the cursor moves on."""
    async with open_memory(make_settings(**{"decay.sweep_batch_limit": 1000})) as mem:
        await bulk_insert(mem.pool, count=10_000, created_at=NOW - timedelta(days=30), importance=5)
        for run in range(1, 11):
            report = await mem.memories.sweep(now=NOW, max_batches=1)
            assert (report.scanned, report.demoted) == (1000, 1000), run
            demoted = await mem.pool.fetchval(
                "SELECT count(*) FROM amrita_memory.memory WHERE importance = 3"
            )
            assert demoted == 1000 * run
        # Every row was visited exactly once: all demoted, none twice (which would purge it).
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 10_000
        report = await mem.memories.sweep(now=NOW, max_batches=1)
        assert report.wrapped and report.scanned == 0
        report = await mem.memories.sweep(now=NOW)
        assert (report.scanned, report.demoted, report.purged) == (10_000, 0, 0)
        assert await mem.pool.fetchval("SELECT passes FROM amrita_memory.sweep_state") >= 2


async def test_a_run_from_the_middle_covers_the_whole_table(
    make_settings: Callable[..., Settings],
) -> None:
    async with open_memory(make_settings(**{"decay.sweep_batch_limit": 300})) as mem:
        await bulk_insert(mem.pool, count=2000, created_at=NOW - timedelta(days=60), importance=2)
        # the cursor is the position 'partition_key/id' in the primary key's order (v8)
        middle = await mem.pool.fetchval(
            "SELECT partition_key || '/' || id FROM amrita_memory.memory"
            " ORDER BY partition_key, id OFFSET 1000 LIMIT 1"
        )
        await mem.pool.execute("UPDATE amrita_memory.sweep_state SET cursor_key = $1", middle)
        report = await mem.memories.sweep(now=NOW)
        assert (report.scanned, report.purged) == (2000, 2000)
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0
        assert await mem.pool.fetchval("SELECT cursor_key FROM amrita_memory.sweep_state") == middle


async def test_rows_being_edited_are_skipped_not_waited_for(memory: Memory) -> None:
    busy = await add(memory, "正在被修改", 3, timedelta(days=30))
    idle = await add(memory, "没人动", 3, timedelta(days=30))
    async with memory.pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT 1 FROM amrita_memory.memory WHERE id = $1 FOR UPDATE", busy)
        report = await asyncio.wait_for(memory.memories.sweep(now=NOW), timeout=10)
    assert report.purged == 1
    assert await importance_of(memory, busy) == 3
    assert await importance_of(memory, idle) is None
    assert await assert_index_in_step(memory) == {busy}


ANCIENT = timedelta(days=1000)  # past every tier lifetime (7 / 25.1 / 90 days)


async def _manual_and_auto(mem: Memory) -> dict[str, str]:
    """A manual and an automatic memory per tier, all far past every lifetime."""
    return {
        "user_low": await add(mem, "我喜欢猫", 3, ANCIENT, source="user"),
        "auto_low": await add(mem, "我喜欢狗", 3, ANCIENT),
        "user_high": await add(mem, "我的生日是五月一日", 9, ANCIENT, source="user"),
        "auto_high": await add(mem, "我的生日是六月一日", 9, ANCIENT),
    }


async def test_manual_memories_survive_the_sweep(memory: Memory) -> None:
    """The sweep is an automatic process, source=user rows are kept."""
    ids = await _manual_and_auto(memory)
    report = await memory.memories.sweep(now=NOW)
    assert (report.scanned, report.demoted, report.purged, report.kept) == (4, 1, 1, 2)
    assert await importance_of(memory, ids["user_low"]) == 3
    assert await importance_of(memory, ids["user_high"]) == 9
    assert await importance_of(memory, ids["auto_low"]) is None
    assert await importance_of(memory, ids["auto_high"]) == 5
    # Much later, still untouched; the automatic ones are long gone, index in step.
    for days in (100, 200):
        await memory.memories.sweep(now=NOW + timedelta(days=days))
    assert await importance_of(memory, ids["user_low"]) == 3
    assert await importance_of(memory, ids["user_high"]) == 9
    assert await importance_of(memory, ids["auto_high"]) is None
    assert await assert_index_in_step(memory) == {ids["user_low"], ids["user_high"]}


async def test_manual_memories_swept_like_others_when_unprotected(
    make_settings: Callable[..., Settings],
) -> None:
    async with open_memory(make_settings(protect_manual_memories=False)) as mem:
        ids = await _manual_and_auto(mem)
        report = await mem.memories.sweep(now=NOW)
        assert (report.scanned, report.demoted, report.purged, report.kept) == (4, 2, 2, 0)
        assert await importance_of(mem, ids["user_low"]) is None
        assert await importance_of(mem, ids["auto_low"]) is None
        assert await importance_of(mem, ids["user_high"]) == 5
        assert await importance_of(mem, ids["auto_high"]) == 5
        assert await assert_index_in_step(mem) == {ids["user_high"], ids["auto_high"]}


async def test_dry_run_counts_manual_memories_as_kept(memory: Memory) -> None:
    await _manual_and_auto(memory)
    before = await memory.pool.fetch("SELECT id, importance FROM amrita_memory.memory ORDER BY id")
    report = await memory.memories.sweep(now=NOW, dry_run=True)
    assert (report.scanned, report.demoted, report.purged, report.kept) == (4, 1, 1, 2)
    assert (
        await memory.pool.fetch("SELECT id, importance FROM amrita_memory.memory ORDER BY id")
        == before
    )
