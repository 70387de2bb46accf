"""sweep_batch_v9: the sweep walked in the heap's order, block range by block range.

It changes what sweep_batch_v8 (the primary key's walk, still installed for the previous
release) changes over a whole pass: rows, per-memory history, totals, purged ids, under
three configurations, with demotions that leave their page (no HOT: an index on
importance, full pages). A demotion moved to a page the walk reaches later is not met a
second time (without the run's start it is: the check can fail); a row inserted during
a run is left to the next; a run resumes at a given block and comes back to it; two
sweeps at once take turns batch by batch and together visit each row once. The
service-level behaviour (cursor over successive runs, dry run, skipped locked rows) is
tests/contract/test_sweep.py, run on v9.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from amrita_memory_pg.memory import Memory
from tests.integration.test_sweep_sql import HISTORY, MEMORIES, _entries, _fill
from tests.support.memory import memory_on

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
V8 = (
    "SELECT scanned, demoted, purged, kept, next_cursor, wrapped, purged_ids"
    " FROM amrita_memory.sweep_batch_v8($1, $3, $4, $7, $5, $6, $8, $2, NULL)"
)
V9 = (
    "SELECT scanned, demoted, purged, kept, next_cursor, wrapped, purged_ids, heap_blocks"
    " FROM amrita_memory.sweep_batch_v9($1, $3, $4, $7, $5, $6, $8, $2, NULL, $9::text::xid8)"
)
#: what sweep_start reads: the first xid after this moment (a run's start)
SINCE = "SELECT pg_snapshot_xmax(pg_current_snapshot())::text"
#: the persisted cursor's batch, as the driver calls it
PERSISTED = (
    "SELECT scanned, demoted, purged, next_cursor, wrapped FROM amrita_memory.sweep_batch_v9("
    "$1, 7, 90, $2, $3, true, false, NULL, NULL, $4::text::xid8)"
)
#: no HOT demotion: an index names importance (as the block indexes do)
NOT_HOT = "CREATE INDEX ix_test_importance ON amrita_memory.memory (importance)"
START = (0, 0)


async def _pass_v8(conn: asyncpg.Connection, config: tuple[Any, ...], batch: int) -> list[Any]:
    replies, cursor = [], ""
    while True:
        row = await conn.fetchrow(V8, NOW, cursor, *config, batch, False)
        replies.append(row)
        if row["wrapped"]:
            return replies
        cursor = row["next_cursor"]


async def _pass_v9(
    conn: asyncpg.Connection,
    config: tuple[Any, ...],
    batch: int,
    since: str | None,
    dry: bool = False,
) -> list[Any]:
    """Every batch of a whole pass from the start (explicit cursors), as the rows returned."""
    replies: list[Any] = []
    cursor = START
    while True:
        row = await conn.fetchrow(V9, NOW, cursor, *config, batch, dry, since)
        assert row is not None
        replies.append(row)
        if row["wrapped"]:
            return replies
        cursor = row["next_cursor"]


async def _copies(conn: asyncpg.Connection, n: int, importance: int, age: timedelta) -> None:
    """n more memories like the first one, of one importance and age (tier clock included)."""
    await conn.execute(
        "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance, source,"
        " created_at, updated_at, tier_since, embedding, embed_fingerprint, search_tokens)"
        " SELECT t.partition_key, t.scope, t.content || ' ' || g, $2, 'auto', $3, $3, $3,"
        " t.embedding, t.embed_fingerprint, t.search_tokens"
        " FROM (SELECT * FROM amrita_memory.memory LIMIT 1) t, generate_series(1, $1) g",
        n, importance, NOW - age,
    )  # fmt: skip


async def _template(mem: Memory) -> None:
    """One memory to copy, then removed by the caller's copies' count."""
    await mem.memories.add(
        partition_key="QQPlatform_Group_20002", scope="group", content="模板记忆",
        importance=5, now=NOW,
    )  # fmt: skip


async def _blocks(conn: asyncpg.Connection) -> dict[str, int]:
    rows = await conn.fetch(
        "SELECT id, (ctid::text::point)[0]::bigint AS block FROM amrita_memory.memory"
    )
    return {r["id"]: r["block"] for r in rows}


@pytest.mark.parametrize(
    ("short", "long", "restart", "protect"),
    [(7.0, 90.0, True, True), (7.0, 90.0, False, False), (20.0, 3.0, True, False)],
    ids=["defaults", "no-restart-unprotected", "swapped-bounds"],
)
async def test_v9_changes_what_v8_changes_over_a_pass(
    db_dsn: str, tmp_path: Path, short: float, long: float, restart: bool, protect: bool
) -> None:
    config = (short, long, restart, protect)
    async with memory_on(db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        # full pages: a demotion that cannot stay on its page goes to another one
        await mem.pool.execute("ALTER TABLE amrita_memory.memory SET (fillfactor = 100)")
        await _fill(mem, 240)
        results: dict[str, Any] = {}
        async with mem.pool.acquire() as conn:
            for version in ("v8", "v9"):
                tx = conn.transaction()
                await tx.start()
                await conn.execute(NOT_HOT)
                await conn.execute(
                    "SELECT set_config('amrita_memory.actor', 'person:alice', true),"
                    " set_config('amrita_memory.note', '清理', true)"
                )
                before = {(r[0], r[1]): r for r in await conn.fetch(MEMORIES)}
                blocks = await _blocks(conn)
                if version == "v8":
                    replies = await _pass_v8(conn, config, 40)
                else:
                    replies = await _pass_v9(conn, config, 40, await conn.fetchval(SINCE))
                    moved = await _blocks(conn)
                    # demotions left their page for a later one the walk then reached
                    assert sum(moved[i] > blocks[i] for i in moved) > 0
                after = {(r[0], r[1]): tuple(r) for r in await conn.fetch(MEMORIES)}
                results[version] = (
                    after,
                    {k: _entries(await conn.fetch(HISTORY, *k)) for k in before},
                    [sum(r[c] for r in replies) for c in ("scanned", "demoted", "purged", "kept")],
                    sorted(i for r in replies for i in r["purged_ids"]),
                )
                await tx.rollback()
        assert results["v9"] == results["v8"]
        totals = results["v9"][2]
        assert totals[0] == 240 and totals[1] >= 5 and totals[2] >= 5


async def test_a_demotion_moved_to_a_later_block_is_not_swept_again(
    db_dsn: str, tmp_path: Path
) -> None:
    """The reference clock (no restart): a high memory demoted to medium is due again at
    once, so meeting its new tuple later in the pass would demote it twice."""
    async with memory_on(
        db_dsn, tmp_path, decay__sweep_enabled=False, decay__restart_clock_on_demote=False,
        decay__sweep_batch_limit=100,
    ) as mem:  # fmt: skip
        await mem.pool.execute("ALTER TABLE amrita_memory.memory SET (fillfactor = 100)")
        await _template(mem)
        async with mem.pool.acquire() as conn:
            await _copies(conn, 400, 9, timedelta(days=100))
            await conn.execute("DELETE FROM amrita_memory.memory WHERE content = '模板记忆'")
            await conn.execute(NOT_HOT)
            blocks = await _blocks(conn)
            # without the run's start the walk meets its own demotions again: the check
            # below can fail
            tx = conn.transaction()
            await tx.start()
            await _pass_v9(conn, (7.0, 90.0, False, True), 100, None)
            twice = 400 - await conn.fetchval(
                "SELECT count(*) FROM amrita_memory.memory WHERE importance = 5"
            )  # demoted again to 3, or on to a purge
            await tx.rollback()
            assert twice > 0
        report = await mem.memories.sweep(now=NOW, force=True)
        assert (report.scanned, report.demoted, report.purged) == (400, 400, 0)
        levels = await mem.pool.fetch(
            "SELECT importance, count(*) FROM amrita_memory.memory GROUP BY 1"
        )
        assert [tuple(r) for r in levels] == [(5, 400)]
        async with mem.pool.acquire() as conn:
            moved = await _blocks(conn)
        # some landed past every original row: the walk reached them after their demotion
        assert sum(moved[i] > max(blocks.values()) for i in moved) > 0
        # the next run is another pass: each is demoted once more
        report = await mem.memories.sweep(now=NOW, force=True)
        assert (report.scanned, report.demoted) == (400, 400)


async def test_a_row_inserted_during_a_run_is_left_to_the_next(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        await _template(mem)
        async with mem.pool.acquire() as conn, mem.pool.acquire() as other:
            await _copies(conn, 300, 5, timedelta(days=1))
            since = await conn.fetchval(SINCE)
            first = await conn.fetchrow(PERSISTED, NOW, 100, True, since)
            assert (first["scanned"], first["wrapped"]) == (100, False)
            # committed by another session while the run is under way: due for a purge
            late = await other.fetchval(
                "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance,"
                " created_at, updated_at, tier_since, embedding, embed_fingerprint)"
                " SELECT partition_key, scope, '后来的', 2, $1, $1, $1, embedding,"
                " embed_fingerprint FROM amrita_memory.memory LIMIT 1 RETURNING id",
                NOW - timedelta(days=30),
            )
            scanned, purged = first["scanned"], 0
            while True:
                row = await conn.fetchrow(PERSISTED, NOW, 100, True, since)
                scanned, purged = scanned + row["scanned"], purged + row["purged"]
                if row["wrapped"]:
                    break
            assert (scanned, purged) == (301, 0)  # the template and its 300 copies
            assert (
                await conn.fetchval("SELECT count(*) FROM amrita_memory.memory WHERE id = $1", late)
                == 1
            )
        # the next run sweeps it
        report = await mem.memories.sweep(now=NOW, force=True)
        assert (report.scanned, report.purged) == (302, 1)
        assert (
            await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory WHERE id = $1", late)
            == 0
        )


async def test_a_run_resumes_at_a_given_block_and_comes_back_to_it(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(
        db_dsn, tmp_path, decay__sweep_enabled=False, decay__sweep_batch_limit=100
    ) as mem:
        await _template(mem)
        async with mem.pool.acquire() as conn:
            await _copies(conn, 600, 2, timedelta(days=60))
            await conn.execute("DELETE FROM amrita_memory.memory WHERE content = '模板记忆'")
            blocks = await _blocks(conn)
        middle = sorted(blocks.values())[len(blocks) // 2]
        at = f"({middle},0)"
        await mem.pool.execute("UPDATE amrita_memory.sweep_state SET cursor_tid = $1", at)
        # a dry run from there (explicit cursor) sees only the rows from that block on
        dry = await mem.pool.fetchrow(
            V9, NOW, (middle, 0), 7.0, 90.0, True, True, 10_000, True, None
        )
        assert dry["scanned"] == sum(b >= middle for b in blocks.values())
        assert dry["heap_blocks"] > middle
        # one batch of a real run starts at that block
        report = await mem.memories.sweep(now=NOW, force=True, max_batches=1)
        assert report.purged == 100
        gone = set(blocks) - {
            r["id"] for r in await mem.pool.fetch("SELECT id FROM amrita_memory.memory")
        }
        assert len(gone) == 100 and min(blocks[i] for i in gone) >= middle
        stopped = await mem.pool.fetchval("SELECT cursor_tid FROM amrita_memory.sweep_state")
        # the next run resumes there and goes round to it: every other row once
        report = await mem.memories.sweep(now=NOW, force=True)
        assert (report.scanned, report.purged) == (500, 500)
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0
        assert (
            await mem.pool.fetchval("SELECT cursor_tid FROM amrita_memory.sweep_state") == stopped
        )


async def test_two_sweeps_at_once_take_turns_and_visit_each_row_once(
    db_dsn: str, tmp_path: Path
) -> None:
    """Two sessions on the persisted cursor: a batch holds the cursor's row lock until it
    commits, so the other waits and then continues after it; the lap's start is shared,
    so neither meets a demotion of the other's again (the reference clock: it would be
    demoted twice). Then the same through the service, two processes' pools at once."""
    async with memory_on(
        db_dsn, tmp_path, decay__sweep_enabled=False, decay__restart_clock_on_demote=False,
        decay__sweep_batch_limit=100,
    ) as mem:  # fmt: skip
        await mem.pool.execute("ALTER TABLE amrita_memory.memory SET (fillfactor = 100)")
        await _template(mem)
        async with mem.pool.acquire() as a, mem.pool.acquire() as b:
            await _copies(a, 500, 9, timedelta(days=100))
            await a.execute("DELETE FROM amrita_memory.memory WHERE content = '模板记忆'")
            await a.execute(NOT_HOT)
            since_a, since_b = await a.fetchval(SINCE), await b.fetchval(SINCE)
            tx = a.transaction()
            await tx.start()
            first = await a.fetchrow(PERSISTED, NOW, 100, False, since_a)
            waiting = asyncio.ensure_future(b.fetchrow(PERSISTED, NOW, 100, False, since_b))
            await asyncio.sleep(0.5)
            assert not waiting.done()  # the cursor's row lock
            await tx.commit()
            second = await waiting
            assert second["next_cursor"] > first["next_cursor"]
            totals = [first["scanned"] + second["scanned"], first["demoted"] + second["demoted"]]
            turn = 0
            while True:
                conn, since = (a, since_a) if turn % 2 == 0 else (b, since_b)
                row = await conn.fetchrow(PERSISTED, NOW, 100, False, since)
                totals = [totals[0] + row["scanned"], totals[1] + row["demoted"]]
                turn += 1
                if row["wrapped"]:
                    break
            assert totals == [500, 500]
            assert (
                await a.fetchval("SELECT count(*) FROM amrita_memory.memory WHERE importance = 5")
                == 500
            )
        # two processes' runs started together: one pass between them
        async with memory_on(
            db_dsn, tmp_path / "b", decay__sweep_enabled=False,
            decay__restart_clock_on_demote=False, decay__sweep_batch_limit=100,
        ) as other:  # fmt: skip
            # (each reads its start before either's first batch: the other's coroutine
            # sends its first query while this one waits for its own)
            reports = await asyncio.gather(
                mem.memories.sweep(now=NOW, force=True), other.memories.sweep(now=NOW, force=True)
            )
        assert sum(r.demoted for r in reports) == 500
        assert sum(r.scanned for r in reports) == 500
        assert [tuple(r) for r in await mem.pool.fetch(
            "SELECT importance, count(*) FROM amrita_memory.memory GROUP BY 1"
        )] == [(3, 500)]  # fmt: skip


async def test_the_batches_visit_every_row_once_in_the_heaps_order(
    db_dsn: str, tmp_path: Path
) -> None:
    """A few rows a batch, a dry run: the cursors are the rows' tids in order, a batch is
    exactly its rows (ending within a block), and p_until stops it, inclusive."""
    async with memory_on(db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        await _template(mem)
        async with mem.pool.acquire() as conn:
            await _copies(conn, 29, 5, timedelta(days=1))
            order = [
                tuple(r[0])
                for r in await conn.fetch("SELECT ctid FROM amrita_memory.memory ORDER BY ctid")
            ]
            assert len({b for b, _ in order}) > 1  # more than one page
            replies = await _pass_v9(conn, (7.0, 90.0, True, True), 4, None, dry=True)
            assert [r["scanned"] for r in replies] == [4] * 7 + [2]
            assert [tuple(r["next_cursor"]) for r in replies[:-1]] == order[3::4]
            assert tuple(replies[-1]["next_cursor"]) == START  # wrapped: back to the start
            row = await conn.fetchrow(
                "SELECT scanned, wrapped, next_cursor FROM amrita_memory.sweep_batch_v9("
                "$1, 7, 90, 100, true, true, true, $2, $3)",
                NOW, order[4], order[10],
            )  # fmt: skip
            assert (row["scanned"], row["wrapped"], tuple(row["next_cursor"])) == (
                6, True, order[10],
            )  # fmt: skip
            async with conn.transaction():
                await conn.execute("SET LOCAL enable_seqscan = off")  # a 30-row table
                plan = "\n".join(
                    r[0]
                    for r in await conn.fetch(
                        "EXPLAIN (COSTS OFF) SELECT id FROM amrita_memory.memory"
                        " WHERE ctid > '(0,0)' AND ctid < '(10,0)'"
                    )
                )
            assert "Tid Range Scan" in plan, plan
