"""The default vector backend: search in PostgreSQL itself.

PostgreSQL always holds every memory *with* its vector — the record of truth for
backups, re-embedding and the sweep. With pgvector the vectors are the
``memory.embedding`` column, so the backend needs no upkeep and a search is one SQL
statement (the named query ``search_memories``: ``amrita_memory.search_memories_v8``)
that filters, scores (vector, keyword or hybrid) with decay and ranks, and refuses a
query vector of another dimension than the store's (SQLSTATE AMF03, mapped by the
repository). A :class:`MemoryQuery` is bound to it by argument name in ONE place,
:func:`search_args`. The alternative, ``ChromaBackend`` (``amrita_memory_pg.storage.chroma``),
keeps a Chroma collection in step and applies the pure twin of the SQL decay in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from amrita_memory_pg.domain.ports import Vector
from amrita_memory_pg.domain.records import MemoryQuery, MemoryRecord, SearchHit
from amrita_memory_pg.domain.trail import Recalled, RecallLog
from amrita_memory_pg.storage.memories import hit_from_row
from amrita_memory_pg.storage.queries import bind, query


def search_args(q: MemoryQuery, candidates: int = 200) -> dict[str, Any]:
    """``search_memories_v8``'s arguments, by name, for one search (``candidates``: rows
    an HNSW / GIN index hands over for re-ranking, at least ``top_k × overfetch``)."""
    where, ranking, decay = q.where, q.ranking, q.decay
    return {
        "p_partition": q.partition_key,
        "p_query": q.vector,
        "p_tokens": list(ranking.tokens),
        "p_mode": ranking.mode,
        "p_top_k": q.top_k,
        "p_now": q.now,
        "p_decay": decay.enabled,
        "p_base_days": decay.half_life_days,
        "p_boost": decay.importance_boost,
        "p_floor": decay.score_floor,
        "p_importance_min": where.importance_min,
        "p_importance_max": where.importance_max,
        "p_scope": where.scope,
        "p_tags": list(where.tags) if where.tags else None,
        "p_category": where.category,
        "p_candidates": max(candidates, q.top_k * decay.overfetch),
        "p_fusion": ranking.fusion,
        "p_rrf_k": float(ranking.rrf_k),
        "p_weight": float(ranking.keyword_weight),
    }


def recall_args(q: MemoryQuery, log: RecallLog, candidates: int = 200) -> dict[str, Any]:
    """``recall_memories_v4``'s arguments, by name: the search's and the access log's."""
    return {
        **search_args(q, candidates),
        "p_chat": log.recall.chat_key,
        "p_who": log.recall.who,
        "p_query_text": log.query,
        "p_surface": log.recall.surface,
        "p_keep": log.keep,
        "p_log": log.log,
    }


def search_statement(q: MemoryQuery, candidates: int = 200) -> tuple[str, list[Any]]:
    """The search as (SQL, values): the named query ``search_memories`` bound by name."""
    return query("search_memories"), bind("search_memories", search_args(q, candidates))


class PgvectorBackend:
    """Search in PostgreSQL itself: one call of ``search_memories_v8`` (every mode)."""

    name = "pgvector"
    write_hooks = False

    def __init__(self, ann_candidates: int = 200) -> None:
        self.ann_candidates = ann_candidates

    async def search(self, pool: asyncpg.Pool, q: MemoryQuery) -> list[SearchHit]:
        sql, args = search_statement(q, self.ann_candidates)
        return [hit_from_row(row) for row in await pool.fetch(sql, *args)]

    async def recall(self, pool: asyncpg.Pool, q: MemoryQuery, log: RecallLog) -> Recalled:
        """The search, the pause check and the access log in ONE statement
        (``recall_memories_v4``): the read path of the chat tool and /memory."""
        args = bind("recall_memories", recall_args(q, log, self.ann_candidates))
        rows = await pool.fetch(query("recall_memories"), *args)
        hits = [hit_from_row(row) for row in rows if row["id"] is not None]
        status = [row for row in rows if row["id"] is None]
        return Recalled(
            hits,
            paused=any(row["paused"] for row in status),
            log_error=next((row["log_error"] for row in status if row["log_error"]), None),
        )

    async def recall_unlogged(self, pool: asyncpg.Pool, q: MemoryQuery) -> Recalled:
        """The pause check and the search in ONE statement that writes nothing
        (``search_unpaused``): a read replica answers it; the caller logs the hits."""
        rows = await pool.fetch(
            query("search_unpaused"),
            *bind("search_unpaused", search_args(q, self.ann_candidates)),
        )
        hits = [hit_from_row(row) for row in rows if row["id"] is not None]
        return Recalled(hits, paused=any(row["paused"] for row in rows), logged=False)

    async def added(self, record: MemoryRecord, vector: Vector) -> None:
        return None

    async def updated(self, record: MemoryRecord, vector: Vector | None) -> None:
        return None

    async def removed(self, ids: Sequence[str]) -> None:
        return None

    async def aclose(self) -> None:
        return None
