"""The default vector backend: search in PostgreSQL itself.

PostgreSQL always holds every memory *with* its vector — the record of truth for
backups, re-embedding and the sweep. With pgvector the vectors are the
``memory.embedding`` column, so the backend needs no upkeep and a search is one SQL
statement (the named query ``search_memories``: ``amrita_memory.search_memories_v4``)
that filters, scores (vector, keyword or hybrid) with decay and ranks, and refuses a query vector of another
dimension than the store's (SQLSTATE AMF03, mapped by the repository). The alternative, ``ChromaBackend`` (``amrita_memory_pg.storage.chroma``), keeps a
Chroma collection in step and applies the pure twin of the SQL decay in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import asyncpg

from amrita_memory_pg.domain.decay import DecayPolicy
from amrita_memory_pg.domain.ports import Vector
from amrita_memory_pg.domain.records import MemoryRecord, Ranking, SearchFilter, SearchHit
from amrita_memory_pg.storage.memories import hit_from_row
from amrita_memory_pg.storage.queries import query


class PgvectorBackend:
    """Search in PostgreSQL itself: one call of ``search_memories_v4`` (every mode)."""

    name = "pgvector"
    write_hooks = False

    def __init__(self, ann_candidates: int = 200) -> None:
        self.ann_candidates = ann_candidates

    async def search(
        self,
        pool: asyncpg.Pool,
        partition_key: str,
        vector: Vector | None,
        *,
        top_k: int,
        where: SearchFilter,
        now: datetime,
        decay: DecayPolicy,
        ranking: Ranking,
    ) -> list[SearchHit]:
        rows = await pool.fetch(
            query("search_memories"),
            partition_key,
            vector,
            list(ranking.tokens),
            ranking.mode,
            top_k,
            now,
            decay.enabled,
            decay.half_life_days,
            decay.importance_boost,
            decay.score_floor,
            where.importance_min,
            where.importance_max,
            where.scope,
            list(where.tags) if where.tags else None,
            where.category,
            max(self.ann_candidates, top_k * decay.overfetch),
            ranking.fusion,
            float(ranking.rrf_k),
            float(ranking.keyword_weight),
        )
        return [hit_from_row(row) for row in rows]

    async def added(self, record: MemoryRecord, vector: Vector) -> None:
        return None

    async def updated(self, record: MemoryRecord, vector: Vector | None) -> None:
        return None

    async def removed(self, ids: Sequence[str]) -> None:
        return None

    async def aclose(self) -> None:
        return None
