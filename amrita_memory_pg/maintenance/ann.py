"""Per-partition HNSW indexes for the few partitions that grow large."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import asyncpg

from amrita_memory_pg.storage.pg.timeouts import lift_statement_timeout


@dataclass(frozen=True, slots=True)
class AnnReport:
    built: list[str]
    dropped: list[str]
    kept: list[str]


ANN_INDEX_PREFIX = "ix_memory_ann_"


async def maintain_ann_indexes(
    pool: asyncpg.Pool, *, min_rows: int, m: int = 16, ef_construction: int = 64
) -> AnnReport:
    """Give every partition of ``min_rows`` or more its own partial HNSW index, and drop
    the indexes of partitions that shrank below half of that (hysteresis).

    Why per partition: an HNSW index over the whole table makes every write and sweep
    pay for the graph, and a partition filter on a shared graph misses results. A
    partial index whose predicate names one partition (and one dimension, so vectors of
    another model never reach its ``::vector(n)`` cast) is searched exactly where it
    helps. Built CONCURRENTLY: writes go on meanwhile. Recorded in ``ann_index``, which
    ``search_memories_v1`` consults.
    """
    async with pool.acquire() as conn:
        # An index build takes minutes on a big partition; RESET ALL on release undoes this.
        await lift_statement_timeout(conn, local=False)
        sizes = await conn.fetch(
            """
            SELECT partition_key, vector_dims(embedding) AS dim, count(*)::integer AS n
              FROM amrita_memory.memory
             GROUP BY 1, 2
            """
        )
        existing = {
            (r["partition_key"], r["dim"]): r["index_name"]
            for r in await conn.fetch(
                "SELECT partition_key, dim, index_name FROM amrita_memory.ann_index"
            )
        }
        size_of = {(r["partition_key"], r["dim"]): r["n"] for r in sizes}
        report = AnnReport(built=[], dropped=[], kept=[])
        for key, name in sorted(existing.items()):
            if size_of.get(key, 0) < min_rows // 2:
                await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS amrita_memory.{name}")
                await conn.execute(
                    "DELETE FROM amrita_memory.ann_index WHERE partition_key = $1 AND dim = $2",
                    *key,
                )
                report.dropped.append(name)
            else:
                report.kept.append(name)
        for (partition, dim), n in sorted(size_of.items()):
            if n < min_rows or (partition, dim) in existing:
                continue
            name = ANN_INDEX_PREFIX + hashlib.md5(f"{partition}|{dim}".encode()).hexdigest()[:24]
            # A failed CONCURRENTLY build leaves an INVALID index behind: clear it first.
            await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS amrita_memory.{name}")
            ddl = await conn.fetchval(
                """
                SELECT format(
                    'CREATE INDEX CONCURRENTLY %I ON amrita_memory.memory USING hnsw '
                    '((embedding::vector(%s)) vector_l2_ops) WITH (m = %s, ef_construction = %s) '
                    'WHERE partition_key = %L AND vector_dims(embedding) = %s',
                    $1::text, $2::integer, $3::integer, $4::integer, $5::text, $2::integer)
                """,
                name,
                dim,
                m,
                ef_construction,
                partition,
            )
            await conn.execute(ddl)
            await conn.execute(
                "INSERT INTO amrita_memory.ann_index (partition_key, dim, index_name, rows_at_build) "
                "VALUES ($1, $2, $3, $4) ON CONFLICT (partition_key, dim) DO NOTHING",
                partition,
                dim,
                name,
                n,
            )
            report.built.append(name)
        return report
