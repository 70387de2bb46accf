"""sweep_batch_v8 (sweep_v8.sql, 0056_walk_by_primary_key, 0.13.0): the sweep walks the
primary key's (partition_key, id) order with a 'partition_key/id' cursor, so the table
needs no index on id alone.

v8 changes exactly what v7 changes over a whole pass (the same rows after, the same
history entries per memory, the same totals and purged ids; only the make-up of each
batch differs) under three configurations; its batches visit every row once, in the
primary key's order, whatever characters a partition key holds ('/' included); a run
from the middle covers the whole table (tests/contract/test_sweep.py); the migration
carries the old cursor over to its position and drops ix_memory_id, the downgrade
builds it again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import pytest
from alembic.script import ScriptDirectory

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.pg import migrate
from tests.integration.test_sweep_v6 import HISTORY, MEMORIES, NOW, _entries, _fill
from tests.support.memory import memory_on

BATCH = (
    "SELECT scanned, demoted, purged, kept, next_cursor, wrapped, purged_ids"
    " FROM amrita_memory.{fn}($1, $3, $4, $7, $5, $6, $8, $2, NULL)"
)


async def _pass(
    conn: asyncpg.Connection, fn: str, config: tuple[Any, ...], batch: int, dry: bool = False
) -> list[Any]:
    """Every batch of a whole pass from the start, as the rows it returned."""
    replies, cursor = [], ""
    while True:
        row = await conn.fetchrow(BATCH.format(fn=fn), NOW, cursor, *config, batch, dry)
        assert row is not None
        replies.append(row)
        if row["wrapped"]:
            return replies
        cursor = row["next_cursor"]


@pytest.mark.usefixtures("retired_sql")  # v7: retired by 0057, installed again
@pytest.mark.parametrize(
    ("short", "long", "restart", "protect"),
    [(7.0, 90.0, True, True), (7.0, 90.0, False, False), (20.0, 3.0, True, False)],
    ids=["defaults", "no-restart-unprotected", "swapped-bounds"],
)
async def test_v8_changes_what_v7_changes_and_records_the_same_history(
    memory: Memory, short: float, long: float, restart: bool, protect: bool
) -> None:
    await _fill(memory)
    config = (short, long, restart, protect)
    async with memory.pool.acquire() as conn:
        before = {(r[0], r[1]): tuple(r) for r in await conn.fetch(MEMORIES)}
        seen = {}
        for fn in ("sweep_batch_v7", "sweep_batch_v8"):
            tx = conn.transaction()
            await tx.start()
            await conn.execute("SELECT set_config('amrita_memory.actor', 'person:alice', true)")
            replies = await _pass(conn, fn, config, 40)
            after = {(r[0], r[1]): tuple(r) for r in await conn.fetch(MEMORIES)}
            changed = sorted(k for k, r in before.items() if after.get(k) != r)
            history = {k: _entries(await conn.fetch(HISTORY, *k)) for k in changed}
            totals = [sum(r[c] for r in replies) for c in ("scanned", "demoted", "purged", "kept")]
            purged = sorted(i for r in replies for i in r["purged_ids"])
            seen[fn] = (after, history, totals, purged)
            await tx.rollback()
    (after7, hist7, totals7, purged7), (after8, hist8, totals8, purged8) = seen.values()
    assert after8 == after7
    assert hist8 == hist7
    assert totals8 == totals7 and totals8[0] == len(before)
    assert purged8 == purged7
    assert len(hist7) >= 20 and len(hist7) == totals7[1] + totals7[2]


async def test_the_batches_visit_every_row_once_in_primary_key_order(memory: Memory) -> None:
    """Partition keys with '/' (the cursor's separator), spaces and CJK, walked a few rows a
    batch: the cursors are the rows' positions in order, and nothing is seen twice."""
    keys = ["a/b", "a/b/c", "a", "a b", "群/20002", "QQPlatform_Private_10001"]
    for i in range(30):
        await memory.memories.add(
            partition_key=keys[i % len(keys)], scope="user", content=f"记忆 {i}", now=NOW
        )
    async with memory.pool.acquire() as conn:
        order = [
            f"{r[0]}/{r[1]}"
            for r in await conn.fetch(
                "SELECT partition_key, id FROM amrita_memory.memory ORDER BY partition_key, id"
            )
        ]
        replies = await _pass(conn, "sweep_batch_v8", (7.0, 90.0, True, True), 4, dry=True)
    assert [r["scanned"] for r in replies] == [4] * 7 + [2]
    assert [r["next_cursor"] for r in replies[:-1]] == order[3::4]
    assert replies[-1]["next_cursor"] == ""  # wrapped: back to the start
    # p_until stops a pass at a position, inclusive
    async with memory.pool.acquire() as conn:
        row = await conn.fetchrow(
            "SELECT scanned, wrapped, next_cursor FROM amrita_memory.sweep_batch_v8("
            "$1, 7, 90, 100, true, true, true, $2, $3)",
            NOW, order[4], order[10],
        )  # fmt: skip
    assert tuple(row) == (6, True, order[10])


async def test_the_migration_carries_the_cursor_and_drops_the_id_index(
    empty_db_dsn: str, tmp_path: Path
) -> None:
    revision = "0056_walk_by_primary_key"
    script = ScriptDirectory.from_config(migrate.alembic_config()).get_revision(revision)
    assert script is not None and isinstance(script.down_revision, str)
    await migrate.upgrade(empty_db_dsn)
    async with memory_on(empty_db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        await _fill(mem, 20)
    await migrate.downgrade(empty_db_dsn, script.down_revision)
    conn = await asyncpg.connect(empty_db_dsn)
    index = "SELECT to_regclass('amrita_memory.ix_memory_id') IS NOT NULL"
    try:
        key, mid = await conn.fetchrow(
            "SELECT partition_key, id FROM amrita_memory.memory ORDER BY id OFFSET 7 LIMIT 1"
        )
        await conn.execute("UPDATE amrita_memory.sweep_state SET cursor_id = $1", mid)
        assert await conn.fetchval(index)
        await migrate.upgrade(empty_db_dsn)
        assert await conn.fetchval("SELECT cursor_key FROM amrita_memory.sweep_state") == (
            f"{key}/{mid}"
        )
        assert not await conn.fetchval(index)
        await conn.execute("SET enable_seqscan = off")  # a 20-row table; the walk's keyset
        plan = "\n".join(
            r[0]
            for r in await conn.fetch(
                "EXPLAIN (COSTS OFF) SELECT id FROM amrita_memory.memory"
                " WHERE (partition_key, id) > ('a', 'b') ORDER BY partition_key, id LIMIT 5"
            )
        )
        assert "pk_memory" in plan, plan
        await migrate.downgrade(empty_db_dsn, script.down_revision)
        assert await conn.fetchval(index)
        columns = await conn.fetch(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = 'amrita_memory' AND table_name = 'sweep_state'"
        )
        assert "cursor_key" not in {r[0] for r in columns}
    finally:
        await conn.close()
    await migrate.upgrade(empty_db_dsn)
