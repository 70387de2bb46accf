"""Per-partition HNSW indexes for the few partitions that grow large."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import asyncpg

from amrita_memory_pg.storage.pg.timeouts import lift_statement_timeout
from amrita_memory_pg.storage.queries import query


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
    ``search_memories_v8`` consults.
    """
    async with pool.acquire() as conn:
        # An index build takes minutes on a big partition; RESET ALL on release undoes this.
        await lift_statement_timeout(conn, local=False)
        sizes = await conn.fetch(query("ann_partition_sizes"))
        existing = {
            (r["partition_key"], r["dim"]): r["index_name"]
            for r in await conn.fetch(query("ann_indexes"))
        }
        size_of = {(r["partition_key"], r["dim"]): r["n"] for r in sizes}
        report = AnnReport(built=[], dropped=[], kept=[])
        for key, name in sorted(existing.items()):
            if size_of.get(key, 0) < min_rows // 2:
                await _drop_index(conn, name)
                await conn.execute(query("ann_forget_index"), *key)
                report.dropped.append(name)
            else:
                report.kept.append(name)
        for (partition, dim), n in sorted(size_of.items()):
            if n < min_rows or (partition, dim) in existing:
                continue
            name = ANN_INDEX_PREFIX + hashlib.md5(f"{partition}|{dim}".encode()).hexdigest()[:24]
            # A failed CONCURRENTLY build leaves an INVALID index behind: clear it first.
            await _drop_index(conn, name)
            ddl = await conn.fetchval(
                query("ann_create_index_ddl"), name, dim, m, ef_construction, partition
            )
            await conn.execute(ddl)
            await conn.execute(query("ann_record_index"), partition, dim, name, n)
            report.built.append(name)
        return report


async def _drop_index(conn: Any, name: str) -> None:
    """Drop one of our indexes, concurrently and if it exists (the name quoted in SQL)."""
    await conn.execute(await conn.fetchval(query("ann_drop_index_ddl"), name))
