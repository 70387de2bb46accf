"""``store_meta``: the one row that says which model made the vectors and which key format
the partition keys are in. Every read and write of it goes through this module (the
named queries of ``sql/queries/store_meta.sql``, one function each).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from amrita_memory_pg.domain.fingerprint import describe
from amrita_memory_pg.domain.ports import Embedder
from amrita_memory_pg.storage.queries import query


@dataclass(frozen=True, slots=True)
class StoreMeta:
    fingerprint: str | None
    protocol: str | None
    model: str | None
    base_url: str | None
    dim: int | None
    key_format_version: int | None

    def describe(self) -> str:
        """The recorded model, credentials redacted (``?`` for parts never recorded)."""
        return describe(self.protocol, self.model, self.base_url)


async def vector_rows(conn: Any) -> int:
    """How many stored vectors the recorded model made (memories and knowledge entries;
    ``conn`` is a connection or a pool): 0 means any model is consistent."""
    return int(await conn.fetchval(query("count_vector_rows")))


async def read(conn: Any) -> StoreMeta:
    """The row (``conn`` is a connection or a pool)."""
    row = await conn.fetchrow(query("read_store_meta"))
    assert row is not None, "migration 0001 inserts the store_meta row"
    return StoreMeta(
        fingerprint=row["embed_fingerprint"],
        protocol=row["embed_protocol"],
        model=row["embed_model"],
        base_url=row["embed_base_url"],
        dim=row["embed_dim"],
        key_format_version=row["key_format_version"],
    )


async def write_model(
    conn: Any,
    *,
    fingerprint: str | None,
    protocol: str | None,
    model: str | None,
    base_url: str | None,
    dim: int | None,
    keep_dim: bool = True,
    reset_key_format: bool = False,
) -> None:
    """Record the model of the stored vectors.

    ``keep_dim`` keeps a recorded dimension when ``dim`` is None (the escape hatch that
    records a model without embedding anything); ``reset_key_format`` marks the keys for
    migration (after a restore, whose rows may carry legacy keys).
    """
    await conn.execute(
        query("write_store_model"),
        fingerprint,
        protocol,
        model,
        base_url,
        dim,
        keep_dim,
        reset_key_format,
    )


async def write_embedder(conn: Any, embedder: Embedder, *, dim: int | None = None) -> None:
    """Record ``embedder``'s model as the store's (its dimension when known)."""
    provider = embedder.provider
    await write_model(
        conn,
        fingerprint=embedder.fingerprint,
        protocol=provider.protocol,
        model=provider.model,
        base_url=provider.base_url,
        dim=dim if dim is not None else embedder.dim,
    )


async def write_key_format_version(conn: Any, version: int) -> None:
    await conn.execute(query("write_key_format_version"), version)
