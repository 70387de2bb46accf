"""The reads of L2 memories: one memory, pages and counts, the search and the recall."""

from __future__ import annotations

import asyncpg

from amrita_memory_pg.domain.ports import RecallingBackend
from amrita_memory_pg.domain.records import MemoryQuery, MemoryRecord, SearchHit
from amrita_memory_pg.domain.trail import Recalled, RecallLog
from amrita_memory_pg.storage.memory_core import RepositoryCore
from amrita_memory_pg.storage.memory_rows import raise_if_model_mismatch, record_from_row
from amrita_memory_pg.storage.pg.outcome import classify
from amrita_memory_pg.storage.queries import query


class MemoryReads(RepositoryCore):
    """Reads of one partition; none of them writes or takes a lock."""

    async def get(self, partition_key: str, memory_id: str) -> MemoryRecord | None:
        """One memory of the partition, or None. The lookup before an update or a delete:
        a driver failure here comes out as :class:`DatabaseRefused` (a read changed nothing)."""
        try:
            row = await self.pool.fetchrow(query("get_memory"), partition_key, memory_id)
        except Exception as exc:
            mapped = classify(exc, sent=False)
            if mapped is None:
                raise
            raise mapped from exc
        return None if row is None else record_from_row(row)

    async def count(self, partition_key: str) -> int:
        value = await self.pool.fetchval(query("count_memories"), partition_key)
        return int(value)

    async def list_page(
        self, partition_key: str, *, limit: int, offset: int = 0
    ) -> tuple[list[MemoryRecord], int]:
        """One page in (created_at, id) order — deterministic (reference W6) — and the total."""
        rows = await self.route.pool_for(partition_key).fetch(
            query("list_memories_page"), partition_key, limit, offset
        )
        if rows:
            return [record_from_row(r) for r in rows], int(rows[0]["total"])
        return [], await self.count(partition_key) if offset else 0

    async def list_filtered(
        self,
        partition_key: str,
        *,
        limit: int,
        offset: int = 0,
        category: str | None = None,
        min_importance: int | None = None,
    ) -> tuple[list[MemoryRecord], int]:
        """:meth:`list_page` of the memories of one category and/or a minimum importance."""
        rows = await self.route.pool_for(partition_key).fetch(
            query("list_memories_filtered"),
            partition_key,
            limit,
            offset,
            category,
            min_importance,
        )
        if rows:
            return [record_from_row(r) for r in rows], int(rows[0]["total"])
        if not offset:
            return [], 0
        total = await self.route.pool_for(partition_key).fetchval(
            query("count_memories_filtered"), partition_key, category, min_importance
        )
        return [], int(total)

    async def digest(self, partition_key: str) -> tuple[int, str]:
        """(count, digest of ids and update times) of a partition: what a clear would delete."""
        row = await self.pool.fetchrow(query("partition_digest"), partition_key)
        assert row is not None
        return int(row["n"]), str(row["digest"])

    async def find_by_prefix(self, partition_key: str, prefix: str) -> list[MemoryRecord]:
        """Exact id first; otherwise every id of the partition starting with ``prefix``."""
        exact = await self.get(partition_key, prefix)
        if exact is not None:
            return [exact]
        if not prefix:
            return []
        rows = await self.pool.fetch(query("find_memories_by_prefix"), partition_key, prefix)
        return [record_from_row(r) for r in rows]

    async def search(self, q: MemoryQuery) -> list[SearchHit]:
        """The true top_k by decay score (relevance alone when decay is disabled), ranked
        as ``q.ranking`` says (default: vector similarity, reference §5.1); ``q.vector``
        may be None in keyword mode only."""
        try:
            return await self.backend.search(self.route.pool_for(q.partition_key), q)
        except asyncpg.PostgresError as exc:
            # search_memories_v8 refuses a query of another dimension than the store's
            # (AMF03) before pgvector would fail on the first stored vector.
            raise_if_model_mismatch(exc)
            raise

    @property
    def recalls(self) -> bool:
        """Whether :meth:`recall` checks the pause, searches and logs in one statement."""
        return isinstance(self.backend, RecallingBackend)

    async def recall(self, q: MemoryQuery, log: RecallLog) -> Recalled | None:
        """The search, the pause check and the access log in one statement, when the
        backend searches in PostgreSQL; None otherwise (the caller searches, then logs).

        On a replica (:class:`ReadRoute`) the statement cannot write: the pause check and
        the search run there in one statement and the hits come back unlogged
        (``Recalled.logged`` False: the caller writes the log to the primary)."""
        if not isinstance(self.backend, RecallingBackend):
            return None
        try:
            if self.route.on_replica(q.partition_key):
                return await self.backend.recall_unlogged(self.route.read_pool, q)
            return await self.backend.recall(self.pool, q, log)
        except asyncpg.PostgresError as exc:
            raise_if_model_mismatch(exc)
            raise
