"""How a memory row and a refused memory statement come out of PostgreSQL.

Shared by the repository, the vector backends (pgvector, Chroma), the consolidation
and admin reads and the legacy importer: one mapping from the memory table's columns
to :class:`MemoryRecord`, and one from the model checks' SQLSTATEs to
:class:`FingerprintMismatch`.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from amrita_memory_pg.domain.errors import FingerprintMismatch
from amrita_memory_pg.domain.ports import VectorBackend
from amrita_memory_pg.domain.records import MemoryRecord, SearchHit
from amrita_memory_pg.storage.queries import query


def record_from_row(row: Any) -> MemoryRecord:
    """A :class:`MemoryRecord` from a row with the memory table's column names."""
    return MemoryRecord(
        id=row["id"],
        partition_key=row["partition_key"],
        scope=row["scope"],
        content=row["content"],
        tags=tuple(row["tags"] or ()),
        importance=int(row["importance"]),
        category=row["category"],
        source=row["source"],
        author=row["author"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def hit_from_row(row: Any) -> SearchHit:
    distance = row["distance"]
    return SearchHit(
        record=record_from_row(row),
        distance=None if distance is None else float(distance),
        decay_score=float(row["decay_score"]),
        age_days=float(row["age_days"]),
        keyword_score=float(row["keyword_score"]) if "keyword_score" in row else 0.0,
        score=float(row["decay_score"]),
    )


#: SQLSTATEs of the model checks (sql/functions/memory.sql), mapped by code, never by
#: message text: another embedding model's fingerprint, another dimension.
FINGERPRINT_MISMATCH = "AMF01"
DIMENSION_MISMATCH = "AMF03"
MODEL_MISMATCH = frozenset({FINGERPRINT_MISMATCH, DIMENSION_MISMATCH})


#: SQLSTATE of the manual-entry guard (sql/functions/memory.sql)
PROTECTED = "AMP01"


def raise_if_model_mismatch(exc: asyncpg.PostgresError) -> None:
    """Raise :class:`FingerprintMismatch` from a refused model check; return otherwise.

    Its text is the database's message and hint: which fingerprint or dimension the store
    holds, which the writer has, and the command that fixes it.
    """
    if exc.sqlstate not in MODEL_MISMATCH:
        return
    message = str(exc).strip()
    hint = getattr(exc, "hint", None)
    raise FingerprintMismatch(f"{message} ({hint})" if hint else message) from exc


async def count_all(conn: Any) -> int:
    """Memories in the whole store (``conn`` is a connection or a pool)."""
    return int(await conn.fetchval(query("count_all_memories")))


async def hold_index_gate(conn: Any, backend: VectorBackend) -> None:
    """Before a transaction's first backend hook: hold the index's write gate until
    commit, so that a Chroma rebuild never compares ids while a write has reached
    Chroma but not yet committed (or rolled back) in PostgreSQL. Nothing for a backend
    without write hooks."""
    if backend.write_hooks:
        await conn.execute(query("chroma_write_gate"))
