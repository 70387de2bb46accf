"""Vector backends: where similarity search runs.

PostgreSQL always holds every memory *with* its vector — the record of truth for
backups, re-embedding and the sweep. A :class:`VectorIndex` answers searches:

- :class:`PgvectorIndex` (default): the vectors are the ``memory.embedding`` column,
  so the index needs no upkeep and a search is one SQL statement
  (``amrita_memory.search_memories_v2``) that filters, scores with decay and ranks.
- ``ChromaIndex`` (``amrita_memory_pg.storage.chroma``): a Chroma collection kept in
  step with the table; it proposes candidates and decay is applied in Python with the
  pure twin of the SQL math (``domain.decay``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import asyncpg

from amrita_memory_pg.embedding.base import Vector
from amrita_memory_pg.settings import DecaySettings
from amrita_memory_pg.storage.memories import MemoryRecord, SearchHit, record_from_row


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Optional filters on top of the partition."""

    importance_min: int | None = None
    importance_max: int | None = None
    scope: str | None = None
    #: a memory matches when it has ANY of these tags
    tags: tuple[str, ...] | None = None


class VectorIndex(Protocol):
    """What the store needs from a vector backend."""

    name: str
    #: whether added/updated/removed do any work; without hooks a single-statement insert
    #: needs no explicit transaction (one round trip instead of three)
    write_hooks: bool

    async def search(
        self,
        pool: asyncpg.Pool,
        partition_key: str,
        query: Vector,
        *,
        top_k: int,
        where: SearchFilter,
        now: datetime,
        decay: DecaySettings,
    ) -> list[SearchHit]:
        """The top_k of the partition by decay score (distance when decay is off)."""
        ...

    async def added(self, record: MemoryRecord, vector: Vector) -> None:
        """A memory was inserted (called inside the inserting transaction)."""
        ...

    async def updated(self, record: MemoryRecord, vector: Vector | None) -> None:
        """A memory's metadata (and, when ``vector`` is given, its vector) changed."""
        ...

    async def removed(self, ids: Sequence[str]) -> None:
        """Memories were deleted (or purged by the sweep)."""
        ...

    async def aclose(self) -> None: ...


class PgvectorIndex:
    """Search in PostgreSQL itself: one call of ``search_memories_v2``."""

    name = "pgvector"
    write_hooks = False

    def __init__(self, ann_candidates: int = 200) -> None:
        self.ann_candidates = ann_candidates

    async def search(
        self,
        pool: asyncpg.Pool,
        partition_key: str,
        query: Vector,
        *,
        top_k: int,
        where: SearchFilter,
        now: datetime,
        decay: DecaySettings,
    ) -> list[SearchHit]:
        rows = await pool.fetch(
            "SELECT * FROM amrita_memory.search_memories_v2("
            "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            partition_key,
            query,
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
            max(self.ann_candidates, top_k * decay.overfetch),
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


def hit_from_row(row: Any) -> SearchHit:
    return SearchHit(
        record=record_from_row(row),
        distance=float(row["distance"]),
        decay_score=float(row["decay_score"]),
        age_days=float(row["age_days"]),
    )
