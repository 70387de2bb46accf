"""Per-partition HNSW, keyword (GIN) and block indexes for the few partitions that grow large."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from amrita_memory_pg.domain.errors import LeaseHeld
from amrita_memory_pg.domain.keys import GLOBAL_KEY
from amrita_memory_pg.services.leases import Leases
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.leases import LeaseRepository
from amrita_memory_pg.storage.pg.timeouts import lift_statement_timeout
from amrita_memory_pg.storage.queries import query


@dataclass(frozen=True, slots=True)
class AnnReport:
    built: list[str]
    dropped: list[str]
    kept: list[str]
    #: the keyword (GIN) indexes built and dropped with them
    keyword_built: list[str] = field(default_factory=list)
    keyword_dropped: list[str] = field(default_factory=list)
    #: the memory block's indexes (ix_memory_top_*) built and dropped
    block_built: list[str] = field(default_factory=list)
    block_dropped: list[str] = field(default_factory=list)
    #: "partition (n dimensions)" of the large partitions whose vectors HNSW cannot index
    #: (over HNSW_MAX_DIM dimensions): they stay on the exact search
    too_wide: list[str] = field(default_factory=list)


ANN_INDEX_PREFIX = "ix_memory_ann_"
KEYWORD_INDEX_PREFIX = "ix_memory_kw_"
BLOCK_INDEX_PREFIX = "ix_memory_top_"
#: pgvector's HNSW takes halfvec up to this many dimensions (vector: 2,000); a partition of
#: a model with more keeps the exact search, which needs no index.
HNSW_MAX_DIM = 4000


def keyword_index_name(partition: str) -> str:
    """The keyword index of a partition (migration 0049 makes the same name in SQL)."""
    return KEYWORD_INDEX_PREFIX + hashlib.md5(partition.encode()).hexdigest()[:24]


def block_index_name(partition: str) -> str:
    """The block index of a partition (block_candidates_v1 makes the same name in SQL)."""
    return BLOCK_INDEX_PREFIX + hashlib.md5(partition.encode()).hexdigest()[:24]


async def maintain_ann_indexes(
    pool: asyncpg.Pool,
    *,
    min_rows: int,
    m: int = 16,
    ef_construction: int = 64,
    wait_seconds: float = 600.0,
    block_global_rows: int | None = None,
) -> AnnReport:
    """Give every partition of ``min_rows`` or more its own partial HNSW index, and drop
    the indexes of partitions that shrank below half of that (hysteresis).

    Why per partition: an HNSW index over the whole table makes every write and sweep
    pay for the graph, and a partition filter on a shared graph misses results. A
    partial index whose predicate names one partition (and one dimension, so vectors of
    another model never reach its ``::halfvec(n)`` cast) is searched exactly where it
    helps. Built CONCURRENTLY: writes go on meanwhile. Recorded in ``ann_index``, which
    ``search_memories_v8`` consults.

    Each partition with an HNSW index also gets a GIN index over its search tokens (and
    loses it with the last of its HNSW indexes): its keyword candidates are found there.
    No GIN index covers the whole table: the small
    partitions, scored row by row, would only pay for it on every write.

    The memory block's indexes (``block_global_rows`` set: ``[injection]`` is enabled,
    every turn reads global and the chat's partition): a btree in the block's order
    (importance, update time, id) for each partition with an HNSW index and for
    ``global`` once it holds ``block_global_rows`` rows (the candidates a turn reads;
    fewer are read whole anyway; kept down to half of it), so that a turn reads its
    candidates in index order instead of every row (``block_candidates_v1``). None drops
    them all: an index over ``importance``, even a partial one, makes the sweep's
    demotions of *every* partition non-HOT (PostgreSQL decides HOT by the columns any
    index names, not by its predicate), a cost for a feature that is off.

    One run at a time in the fleet (the ``ann`` lease): two CREATE INDEX CONCURRENTLY on
    one table deadlock, and a run could take the index another is building for a failed
    one. A second run waits for the first (``wait_seconds``, then :class:`LeaseHeld`) and
    finds its work done.
    """
    leases = Leases(LeaseRepository(pool))
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            async with leases.hold("ann"):
                return await _maintain(pool, min_rows, m, ef_construction, block_global_rows)
        except LeaseHeld:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.5)


async def maintain_configured(pool: asyncpg.Pool, settings: Settings) -> AnnReport:
    """:func:`maintain_ann_indexes` as configured: ``[retrieval]``'s threshold and graph,
    and the block indexes when ``[injection]`` is enabled (global's at its
    ``max_candidates``)."""
    retrieval, injection = settings.retrieval, settings.injection
    return await maintain_ann_indexes(
        pool,
        min_rows=retrieval.ann_min_rows,
        m=retrieval.hnsw_m,
        ef_construction=retrieval.hnsw_ef_construction,
        block_global_rows=injection.max_candidates if injection.enabled else None,
    )


async def _maintain(
    pool: asyncpg.Pool, min_rows: int, m: int, ef_construction: int, block_global_rows: int | None
) -> AnnReport:
    async with pool.acquire() as conn:
        # An index build takes minutes on a big partition; RESET ALL on release undoes this.
        await lift_statement_timeout(conn, local=False)
        sizes = await conn.fetch(query("ann_partition_sizes"))
        registry = await _ann_registry(conn)
        size_of = {(r["partition_key"], r["dim"]): r["n"] for r in sizes}
        report = AnnReport(built=[], dropped=[], kept=[])
        existing: set[tuple[str, int]] = set()
        for row in sorted(registry, key=lambda r: (r["partition_key"], r["dim"])):
            key, name = (row["partition_key"], row["dim"]), row["index_name"]
            # a stale index (over vector, not halfvec) is dropped and built again below
            if size_of.get(key, 0) < min_rows // 2 or row["stale"]:
                await _drop_index(conn, name)
                await conn.execute(query("ann_forget_index"), *key)
                report.dropped.append(name)
            else:
                existing.add(key)
                report.kept.append(name)
        for (partition, dim), n in sorted(size_of.items()):
            if n < min_rows or (partition, dim) in existing:
                continue
            if dim > HNSW_MAX_DIM:
                report.too_wide.append(f"{partition} ({dim} dimensions)")
                continue
            name = ANN_INDEX_PREFIX + hashlib.md5(f"{partition}|{dim}".encode()).hexdigest()[:24]
            # A failed CONCURRENTLY build leaves an INVALID index behind: clear it first.
            await _clear_failed_build(conn, name)
            ddl = await conn.fetchval(
                query("ann_create_index_ddl"), name, dim, m, ef_construction, partition
            )
            await conn.execute(ddl)
            await conn.execute(query("ann_record_index"), partition, dim, name, n)
            report.built.append(name)
        indexed = {r["partition_key"] for r in await _ann_registry(conn)}
        await _keep_partition_indexes(
            conn,
            indexed,
            keyword_index_name,
            (query("keyword_indexes"), query("keyword_index_ddl")),
            report.keyword_built,
            report.keyword_dropped,
        )
        block: set[str] = set()
        if block_global_rows is not None:
            block = set(indexed)
            global_rows = sum(n for (p, _), n in size_of.items() if p == GLOBAL_KEY)
            state = await _index_state(conn, block_index_name(GLOBAL_KEY))
            keep = state is not None and global_rows >= block_global_rows // 2
            if global_rows >= block_global_rows or keep:
                block.add(GLOBAL_KEY)
        await _keep_partition_indexes(
            conn,
            block,
            block_index_name,
            (query("block_indexes"), query("block_index_ddl")),
            report.block_built,
            report.block_dropped,
        )
        return report


async def _ann_registry(conn: Any) -> list[Any]:
    """The HNSW indexes recorded in ``ann_index`` (partition_key, dim, index_name), each
    with ``stale``: not over halfvec, so no search uses it."""
    return list(await conn.fetch(query("ann_indexes")))


async def _keep_partition_indexes(
    conn: Any,
    partitions: set[str],
    name_of: Callable[[str], str],
    queries: tuple[str, str],
    built: list[str],
    dropped: list[str],
) -> None:
    """An index of one kind (keyword, block: ``queries`` lists that kind's indexes and
    makes one's DDL) for each partition in ``partitions``, none for any other. The queries
    are passed as texts, named where they are chosen, so each has one literal call site."""
    list_indexes, index_ddl = queries
    wanted = {name_of(p): p for p in partitions}
    have = {r["index_name"] for r in await conn.fetch(list_indexes)}
    for name in sorted(have - wanted.keys()):
        await _drop_index(conn, name)
        dropped.append(name)
    for name, partition in sorted(wanted.items()):
        if name in have and not await _clear_failed_build(conn, name):
            continue  # valid, or being built by another process
        ddl = await conn.fetchval(index_ddl, name, partition)
        await conn.execute(ddl)
        built.append(name)


async def _clear_failed_build(conn: Any, name: str) -> bool:
    """Drop index ``name`` if it is the INVALID leftover of a failed concurrent build
    (not one another process is building now: two maintenance runs at once). True when
    there is no index of that name any more (to build)."""
    state = await _index_state(conn, name)
    if state is None:
        return True
    if state["valid"] or state["building"]:
        return False
    await _drop_index(conn, name)
    return True


async def _index_state(conn: Any, name: str) -> Any:
    """Index ``name``'s row (valid, building), or None when there is no such index."""
    return await conn.fetchrow(query("index_state"), name)


async def _drop_index(conn: Any, name: str) -> None:
    """Drop one of our indexes, concurrently and if it exists (the name quoted in SQL)."""
    await conn.execute(await conn.fetchval(query("ann_drop_index_ddl"), name))
