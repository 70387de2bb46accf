"""L2 memories: the repository every surface (tools, commands, CLI, L3) goes through.

Texts are embedded before any transaction or lock; the partition cap is checked in the
same transaction as the insert; retrieval is one SQL statement that scores by
similarity × time decay. (API first: the implementation lands with the L2 issue.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from amrita_memory_pg.domain.importance import level_to_label
from amrita_memory_pg.errors import AmritaMemoryError

Scope = Literal["user", "group", "global"]
Category = Literal["preference", "rule", "event", "knowledge"]
Source = Literal["user", "auto", "system"]


class PartitionFull(AmritaMemoryError):
    """The partition already holds ``per_session_memory_limit`` memories."""

    def __init__(self, partition_key: str, limit: int) -> None:
        super().__init__(f"partition {partition_key} is at its limit of {limit} memories")
        self.partition_key = partition_key
        self.limit = limit


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    id: str
    partition_key: str
    scope: Scope
    content: str
    tags: tuple[str, ...]
    importance: int
    category: Category | None
    source: Source
    author: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def importance_label(self) -> str:
        return level_to_label(self.importance)

    @property
    def tags_text(self) -> str:
        """Tags as the reference's single comma-separated string."""
        return ",".join(self.tags)


@dataclass(frozen=True, slots=True)
class SearchHit:
    record: MemoryRecord
    #: squared L2 distance, as Chroma reports it (so reference numbers match)
    distance: float
    #: similarity × decay factor; what results are ordered by
    decay_score: float
    age_days: float


@dataclass(frozen=True, slots=True)
class SweepReport:
    scanned: int
    demoted: int
    purged: int
    kept: int
    #: True when the persisted cursor wrapped around to the start of the table
    wrapped: bool = False


def parse_tags(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """The reference stores tags as one free string; we keep them as a set of trimmed words.

    ``"preference, project，编程"`` → ``("preference", "project", "编程")`` (ASCII and
    full-width commas, order kept, duplicates and empties dropped).
    """
    if value is None:
        return ()
    parts = value.replace("，", ",").split(",") if isinstance(value, str) else list(value)
    seen: dict[str, None] = {}
    for part in parts:
        tag = str(part).strip()
        if tag:
            seen.setdefault(tag, None)
    return tuple(seen)


class MemoryStore:
    """Repository of L2 memories (API contract; implemented in the L2 work).

    All methods take ``now`` for testability (default: the current UTC time).
    """

    async def add(
        self,
        *,
        partition_key: str,
        scope: Scope,
        content: str,
        tags: Sequence[str] = (),
        importance: int = 5,
        category: Category | None = None,
        source: Source = "auto",
        author: str | None = None,
        now: datetime | None = None,
    ) -> MemoryRecord:
        """Embed, then insert under the partition cap; raises :class:`PartitionFull`."""
        raise NotImplementedError

    async def get(self, partition_key: str, memory_id: str) -> MemoryRecord | None:
        raise NotImplementedError

    async def update(
        self,
        partition_key: str,
        memory_id: str,
        *,
        content: str | None = None,
        tags: Sequence[str] | None = None,
        importance: int | None = None,
        category: Category | None = None,
        now: datetime | None = None,
    ) -> MemoryRecord | None:
        """Re-embed when the content changes; None when the id is not in the partition."""
        raise NotImplementedError

    async def delete(self, partition_key: str, memory_id: str) -> bool:
        raise NotImplementedError

    async def list_page(
        self, partition_key: str, *, limit: int, offset: int = 0
    ) -> tuple[list[MemoryRecord], int]:
        """One page in (created_at, id) order, and the partition's total."""
        raise NotImplementedError

    async def count(self, partition_key: str) -> int:
        raise NotImplementedError

    async def find_by_prefix(self, partition_key: str, prefix: str) -> list[MemoryRecord]:
        """Exact id first; otherwise every id of the partition starting with ``prefix``."""
        raise NotImplementedError

    async def search(
        self,
        partition_key: str,
        query: str,
        *,
        top_k: int = 5,
        importance: tuple[int, int] | None = None,
        scope: Scope | None = None,
        tags: Sequence[str] | None = None,
        now: datetime | None = None,
    ) -> list[SearchHit]:
        """The true top_k by decay score (or by distance when decay is disabled)."""
        raise NotImplementedError

    async def sweep(self, *, now: datetime | None = None, dry_run: bool = False) -> SweepReport:
        raise NotImplementedError
