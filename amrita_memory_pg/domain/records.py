"""The product's records: what a memory, a search hit, a memo and a chat line are.

Plain frozen dataclasses with no I/O, shared by storage (which builds them from rows),
the tools (which render them as the reference's JSON) and maintenance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from amrita_memory_pg.domain.decay import DecayPolicy
from amrita_memory_pg.domain.importance import level_to_label

Scope = Literal["user", "group", "global"]
Category = Literal["preference", "rule", "event", "knowledge"]
Source = Literal["user", "auto", "system"]
Role = Literal["user", "bot"]
#: How a search ranks: vector similarity, keyword (BM25 over the search
#: tokens), or both fused; the time decay applies to each.
SearchMode = Literal["vector", "keyword", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("vector", "keyword", "hybrid")
Fusion = Literal["rrf", "weighted"]

CATEGORIES: tuple[Category, ...] = ("preference", "rule", "event", "knowledge")
#: the second source's names of the categories (用户偏好 / 学到的规则 / 重要事件 / 知识库)
CATEGORY_NAMES: dict[str, str] = {
    "preference": "用户偏好",
    "rule": "学到的规则",
    "event": "重要事件",
    "knowledge": "知识库",
}
#: how a person sees who wrote a memory
SOURCE_NAMES: dict[str, str] = {"user": "手动", "auto": "自动", "system": "系统"}

#: Who made a memory (``memory.origin``, sql/functions/origin.sql): the actor kind of
#: the inserting transaction, or ``unknown`` for rows written before origins were
#: recorded. Extraction replaces only ``origin = extraction`` rows still ``source = auto``.
Origin = Literal["person", "llm", "extraction", "l3", "import", "system", "unknown"]
ORIGINS: tuple[Origin, ...] = ("person", "llm", "extraction", "l3", "import", "system", "unknown")


def origin_before_recorded(source: str | None) -> Origin:
    """The origin of a row from before origins were recorded (an older backup), by the
    rule upgraded rows got: a person's row is ``person``, a system row ``system``,
    any automatic one ``unknown`` — never ``extraction``, so no extraction deletes it."""
    if source == "user":
        return "person"
    if source == "system":
        return "system"
    return "unknown"


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
    #: squared L2 distance, as Chroma reports it (so reference numbers match); None in
    #: keyword mode, which embeds no query
    distance: float | None
    #: the reference plugin's score in EVERY mode: similarity 1/(1+distance) × decay factor
    #: (similarity alone when decay is disabled; similarity 1 when no distance is known,
    #: keyword mode, as the reference counts a missing distance)
    decay_score: float
    age_days: float
    #: BM25 of the query's tokens in this memory (0 = no token shared, or vector mode)
    keyword_score: float = 0.0
    #: the ranking key (× decay factor when decay is on): equal to ``decay_score`` in
    #: vector mode, BM25 in keyword mode, the fused score (rrf / weighted) in hybrid mode
    #: (docs/retrieval.md#scores-shown). None until the backend has ranked.
    score: float | None = None


@dataclass(frozen=True, slots=True)
class Ranking:
    """How a search ranks: the mode, the query's search tokens, and the hybrid fusion."""

    mode: SearchMode = "vector"
    tokens: tuple[str, ...] = ()
    fusion: Fusion = "rrf"
    #: the k of reciprocal-rank fusion: 1/(k + rank)
    rrf_k: float = 60.0
    #: the keyword share of the weighted fusion (0..1)
    keyword_weight: float = 0.5


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Optional filters on top of the partition."""

    importance_min: int | None = None
    importance_max: int | None = None
    scope: str | None = None
    #: a memory matches when it has ANY of these tags
    tags: tuple[str, ...] | None = None
    #: only memories of this category (None = any)
    category: str | None = None


@dataclass(frozen=True, slots=True)
class NewMemory:
    """One memory to write, whole, with its embedding: what the repository's ``add`` and
    ``write`` take and bind, by argument name, to ``insert_memory_v7`` / ``write_memory_v6``
    (``storage/memories.py``, :func:`insert_args`)."""

    partition_key: str
    scope: Scope
    content: str
    #: the content's embedding, made before any transaction
    vector: Any
    #: the embedder's fingerprint, checked against the store's by the insert
    fingerprint: str
    now: datetime
    tags: tuple[str, ...] = ()
    importance: int = 5
    category: Category | None = None
    source: Source = "auto"
    author: str | None = None
    #: the content's search tokens (None = left to the token backfill)
    tokens: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """One search of one partition, whole: what the repository and the vector backend take (one
    parameter object, not a dozen positional arguments), and what the pgvector backend
    binds, by argument name, to ``search_memories_v8`` (``storage/pgvector.py``,
    :func:`search_args`)."""

    partition_key: str
    #: the query's embedding (None in keyword mode, which embeds nothing)
    vector: Any
    now: datetime
    top_k: int = 5
    ranking: Ranking = Ranking()
    where: SearchFilter = SearchFilter()
    decay: DecayPolicy = DecayPolicy()  # noqa: RUF009 - frozen, shared safely


@dataclass(frozen=True, slots=True)
class SweepReport:
    scanned: int
    demoted: int
    purged: int
    kept: int
    #: True when the persisted cursor wrapped around to the start of the table
    wrapped: bool = False


@dataclass(frozen=True, slots=True)
class Memo:
    partition_key: str
    #: "" when the partition has no memo (an empty memo is never injected)
    content: str
    #: 0 when no row exists; +1 on every write
    version: int
    updated_at: datetime | None

    @property
    def chars(self) -> int:
        return len(self.content)


@dataclass(frozen=True, slots=True)
class MemoWrite:
    """An accepted write: the memo's new length and version."""

    chars: int
    version: int


@dataclass(frozen=True, slots=True)
class ChatLine:
    id: int
    session_key: str
    user_id: str
    group_id: str | None
    role: Role
    text: str
    created_at: datetime


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
