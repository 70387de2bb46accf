"""memory_block_v3 reads the candidates per partition (through a partition's block index
where maintenance built one) and must return exactly what memory_block_v2 returned, which
ordered every row of the scopes at once: same rows, same order, for every input."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from amrita_memory_pg.domain.keys import GLOBAL_KEY
from amrita_memory_pg.maintenance.ann import block_index_name, maintain_ann_indexes
from tests.support.data import bulk_insert

BIG = "QQPlatform_Group_777"
SMALL = "QQPlatform_Private_1"
EMPTY = "QQPlatform_Private_2"  # a memo, no memories
PAUSED = "QQPlatform_Group_5"
LOADED = "QQPlatform_Group_9"
T0 = datetime(2026, 1, 1, tzinfo=UTC)

BLOCK = """
SELECT b.kind, b.partition_key, b.content, b.id, b.importance, b.category, b.updated_at
  FROM amrita_memory.memory_block_{v}($1::text[], $2::text, $3::text[], $4::integer,
                                      $5::vector, $6::integer, $7::text, $8::bigint) b
"""


async def _fill(conn: asyncpg.Connection) -> None:
    """Rows with many ties: importance from a few values, update times from a few
    instants (so the id decides), in global, a large group, small and paused ones."""
    for key, n in ((GLOBAL_KEY, 320), (BIG, 500), (SMALL, 30), (PAUSED, 40), (LOADED, 15)):
        await bulk_insert(
            conn, count=n, created_at=T0, importance=5, partitions=1, partition_prefix=key
        )
        # bulk_insert appends the partition number (g % 1 = 0) to the prefix
        await conn.execute(
            "UPDATE amrita_memory.memory SET partition_key = $1 WHERE partition_key = $1 || '0'",
            key,
        )
    await conn.execute(
        """
        UPDATE amrita_memory.memory
           SET importance = (ARRAY[2, 5, 5, 8, 10])[1 + abs(hashtext(id)) % 5],
               updated_at = $1::timestamptz + (abs(hashtext(id || 'u')) % 4) * interval '1 day',
               category = (ARRAY[NULL, 'event', 'rule'])[1 + abs(hashtext(id || 'c')) % 3]
        """,
        T0,
    )
    for key in (SMALL, EMPTY, PAUSED, BIG):
        await conn.execute(
            "INSERT INTO amrita_memory.memo (partition_key, content) VALUES ($1, $2)",
            key,
            f"memo of {key}",
        )
    await conn.execute(
        "INSERT INTO amrita_memory.paused_partition (partition_key, paused_at, paused_by) "
        "VALUES ($1, $2, 'op')",
        PAUSED,
        T0,
    )
    await conn.execute(
        "INSERT INTO amrita_memory.loaded_scope (chat_key, scope_key, loaded_by, loaded_at) "
        "VALUES ($1, $2, 'u', $3), ($1, $4, 'u', $3)",
        SMALL,
        LOADED,
        T0,
        PAUSED,
    )
    await conn.execute("ANALYZE amrita_memory.memory")


#: (memo keys, chat key, scope keys): scopes present, missing, empty, paused, repeated
CALLS: list[tuple[list[str], str, list[str]]] = [
    ([SMALL], SMALL, []),
    ([SMALL], SMALL, [GLOBAL_KEY, SMALL]),  # + the chat's loaded scopes (one paused)
    ([BIG], BIG, [GLOBAL_KEY, BIG]),
    ([BIG], BIG, [BIG, GLOBAL_KEY, BIG]),
    ([EMPTY], EMPTY, [GLOBAL_KEY, EMPTY]),
    ([EMPTY], EMPTY, [EMPTY]),
    (["nobody"], "nobody", ["QQPlatform_Private_404"]),
    ([PAUSED], PAUSED, [GLOBAL_KEY, PAUSED]),
    ([SMALL, BIG], BIG, [GLOBAL_KEY, BIG, SMALL, EMPTY]),
]
LIMITS = [0, 1, 7, 120, 200, 2000]


async def _both(conn: asyncpg.Connection, *args: Any) -> tuple[list[Any], list[Any]]:
    v2 = [tuple(r) for r in await conn.fetch(BLOCK.format(v="v2"), *args)]
    v3 = [tuple(r) for r in await conn.fetch(BLOCK.format(v="v3"), *args)]
    return v2, v3


async def _assert_parity(conn: asyncpg.Connection) -> int:
    """v2 == v3 over every call and limit, with and without the held version and the
    relevant top k; returns how many candidate rows were compared."""
    compared = 0
    query = [0.5] * 8
    for (memos, chat, scopes), limit in itertools.product(CALLS, LIMITS):
        v2, v3 = await _both(conn, memos, chat, scopes, limit, None, 0, SMALL, None)
        assert v2 == v3, (memos, chat, scopes, limit)
        compared += sum(1 for r in v2 if r[0] == "memory")
        (version,) = [int(r[3]) for r in v2 if r[0] == "version"]
        v2, v3 = await _both(conn, memos, chat, scopes, limit, query, 3, None, version)
        assert v2 == v3 and not any(r[0] == "memory" for r in v3), (chat, scopes, limit)
    return compared


async def _idx_scans(conn: asyncpg.Connection, name: str) -> int:
    return int(
        await conn.fetchval(
            "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname = $1",
            name,
        )
    )


async def _scanned_after(conn: asyncpg.Connection, name: str, before: int) -> int:
    await conn.execute("SELECT pg_stat_force_next_flush()")  # this backend's counts, now
    for _ in range(20):  # statistics are flushed by the backend shortly after the query
        now = await _idx_scans(conn, name)
        if now > before:
            return now
        await asyncio.sleep(0.1)
    return await _idx_scans(conn, name)


async def test_v3_returns_what_v2_returned_with_and_without_block_indexes(
    conn: asyncpg.Connection, db_dsn: str
) -> None:
    await _fill(conn)
    # the data has what the test is about: ties on (importance, updated_at) past the limit
    ties = await conn.fetchval(
        "SELECT max(n) FROM (SELECT count(*) AS n FROM amrita_memory.memory "
        "GROUP BY partition_key, importance, updated_at) t"
    )
    assert ties >= 10
    assert await _assert_parity(conn) > 1000

    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
    try:
        report = await maintain_ann_indexes(pool, min_rows=400, block_global_rows=200)
    finally:
        await pool.close()
    assert sorted(report.block_built) == sorted(
        [block_index_name(BIG), block_index_name(GLOBAL_KEY)]
    )
    assert await _assert_parity(conn) > 1000

    # demotions, edits and a new row land in the indexes: still the same answer
    await conn.execute(
        "UPDATE amrita_memory.memory SET importance = greatest(importance - 1, 1) "
        "WHERE partition_key IN ($1, $2) AND abs(hashtext(id)) % 3 = 0",
        GLOBAL_KEY,
        BIG,
    )
    await conn.execute(
        "UPDATE amrita_memory.memory SET updated_at = $2 "
        "WHERE partition_key = $1 AND abs(hashtext(id)) % 7 = 0",
        BIG,
        T0 + timedelta(days=9),
    )
    await _assert_parity(conn)


async def test_a_partition_with_a_block_index_is_read_through_it(
    conn: asyncpg.Connection, db_dsn: str
) -> None:
    await _fill(conn)
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
    try:
        # no [injection]: no block index (an index over importance costs every
        # partition's sweep its HOT demotions)
        off = await maintain_ann_indexes(pool, min_rows=400)
        assert off.block_built == [] and off.built  # the HNSW index of BIG was built
        on = await maintain_ann_indexes(pool, min_rows=400, block_global_rows=200)
        assert len(on.block_built) == 2
        name = block_index_name(GLOBAL_KEY)
        # 10 candidates: in a table this small the planner reads 200 of global's 320 rows
        # by a sequential scan; 10 it reads from the index, as 200 of 10,000 at scale
        args = ([SMALL], SMALL, [GLOBAL_KEY, SMALL], 10, None, 0, None, None)
        before = await _idx_scans(conn, name)
        await conn.fetch(BLOCK.format(v="v2"), *args)  # v2's generic plan cannot use it
        assert await _scanned_after(conn, name, before) == before
        await conn.fetch(BLOCK.format(v="v3"), *args)
        assert await _scanned_after(conn, name, before) > before, "the block index was not used"

        # global shrinks below half of the threshold: its index goes; the rest stays
        await conn.execute(
            "DELETE FROM amrita_memory.memory WHERE partition_key = $1 AND "
            "id NOT IN (SELECT id FROM amrita_memory.memory WHERE partition_key = $1 LIMIT 90)",
            GLOBAL_KEY,
        )
        shrunk = await maintain_ann_indexes(pool, min_rows=400, block_global_rows=200)
        assert shrunk.block_dropped == [name] and shrunk.block_built == []
        # [injection] turned off: the remaining one goes too
        again = await maintain_ann_indexes(pool, min_rows=400)
        assert again.block_dropped == [block_index_name(BIG)]
        assert await _assert_parity(conn) > 0
    finally:
        await pool.close()
