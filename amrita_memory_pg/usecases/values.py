"""What the use cases take and give: one value per request, no argument lists to repeat."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from amrita_memory_pg.domain.errors import ToolError
from amrita_memory_pg.domain.records import Category, Scope, SearchHit, SearchMode, Source
from amrita_memory_pg.domain.trail import Recall


class Refusal(ToolError):
    """A request refused for a reason its caller can fix (nothing changed): the message
    says what to do. Each surface maps it once at its edge (JSON for a model)."""


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory to write into ``partition_key``."""

    partition_key: str
    scope: Scope
    content: str
    tags: Sequence[str] = ()
    importance: int = 5
    category: Category | None = None
    source: Source = "auto"
    author: str | None = None
    now: datetime | None = None


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """A search of one partition; ``recall`` (who searches) logs it and honours a pause."""

    partition_key: str
    text: str
    top_k: int = 5
    importance: tuple[int, int] | None = None
    tags: Sequence[str] | None = None
    category: Category | None = None
    mode: SearchMode | None = None
    recall: Recall | None = None
    now: datetime | None = None
    #: only this scope's memories (the admin page's filter)
    scope: Scope | None = None


@dataclass(frozen=True, slots=True)
class MemoryChange:
    """The fields to change on one memory (None: unchanged)."""

    content: str | None = None
    tags: Sequence[str] | None = None
    importance: int | None = None
    category: Category | None = None

    @property
    def empty(self) -> bool:
        return all(v is None for v in (self.content, self.tags, self.importance, self.category))


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The hits of a :class:`MemoryQuery`, best first, and how they were ranked."""

    hits: list[SearchHit]
    #: the query's mode, or the configured default it fell back to
    mode: SearchMode
