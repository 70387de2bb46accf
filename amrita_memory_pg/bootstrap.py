"""The composition module: open a store, build ``Memory`` on it, run the start-up checks.

Everything below (service, maintenance, storage) takes its parts explicitly; only this
module knows how they are created from the settings, and nothing below imports it.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import AsyncIterator, Mapping
from typing import Any

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.domain.keys import KEY_FORMAT_VERSION
from amrita_memory_pg.domain.ports import VectorBackend
from amrita_memory_pg.maintenance.fingerprint import check_fingerprint
from amrita_memory_pg.maintenance.keys import key_format_version, migrate_keys
from amrita_memory_pg.maintenance.tokens import backfill_tokens
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.storage.pg.database import Database
from amrita_memory_pg.storage.pgvector import PgvectorBackend


def create_backend(settings: Settings) -> VectorBackend:
    """The configured vector backend (chroma is imported only when chosen)."""
    if settings.vector_backend == "pgvector":
        return PgvectorBackend(settings.retrieval.ann_candidates)
    if settings.vector_backend == "chroma":
        if importlib.util.find_spec("chromadb") is None:
            raise ConfigError(
                "vector_backend = chroma needs chromadb: pip install 'amrita-memory-pg[chroma]'"
            )
        from amrita_memory_pg.storage.chroma import ChromaBackend

        return ChromaBackend(settings)
    raise ConfigError(f"vector backend {settings.vector_backend!r} is not available in this build")


async def run_startup_checks(store: Store) -> None:
    """What a bot runs once before serving: key migration, token backfill, then the
    fingerprint check.

    The fingerprint check follows ``EMBED_CHECK_ON_STARTUP`` / ``EMBED_MISMATCH_POLICY``
    and may raise :class:`~amrita_memory_pg.domain.errors.FingerprintRefused`.
    """
    if await key_format_version(store.pool) != KEY_FORMAT_VERSION:
        await migrate_keys(store.pool)
    # Rows from before migration 0012 (or restored without tokens) get their search tokens.
    await backfill_tokens(store.pool)
    if store.settings.embedding.check_on_startup:
        await store.embedder.prepare()
        await check_fingerprint(store)


def resolve_settings(settings: Settings | None, overrides: Mapping[str, Any]) -> Settings:
    """``settings`` as given, else config file + environment with ``overrides`` on top.

    Override keys are setting paths with ``__`` between section and key
    (``data_dir=…``, ``embedding__protocol="hash"``), the way a script names them.
    """
    if settings is not None:
        if overrides:
            raise ConfigError("pass either a Settings object or keyword overrides, not both")
        return settings
    return load_settings(overrides={k.replace("__", "."): v for k, v in overrides.items()})


@contextlib.asynccontextmanager
async def open_store(settings: Settings | None = None, **overrides: Any) -> AsyncIterator[Store]:
    """The store's parts without the chat surface (what the CLI's operator commands use).

    Settings from config/env when not given; the embedded server when no DATABASE_URL.
    The schema is migrated to head; no start-up check runs, so it never blocks.
    """
    from amrita_memory_pg.embedding.factory import create_embedder

    settings = resolve_settings(settings, overrides)
    embedder = create_embedder(settings.embedding)
    try:
        backend = create_backend(settings)
        try:
            database = await Database.open(settings)
        except BaseException:
            await backend.aclose()
            raise
    except BaseException:
        await embedder.aclose()
        raise
    store = Store(settings, database, embedder, backend)
    try:
        yield store
    finally:
        try:
            await backend.aclose()
            await embedder.aclose()
        finally:
            await database.close()


@contextlib.asynccontextmanager
async def open_memory(
    settings: Settings | None = None, *, startup: bool = True, **overrides: Any
) -> AsyncIterator[Memory]:
    """Open the store and the chat surface on it.

    ``open_memory(data_dir=tmp)`` opens a throwaway store: an embedded PostgreSQL in
    ``tmp/pg``, started on first use and stopped when the last user closes it. With ``startup`` (the default, what a bot wants) legacy partition keys are converted
    and the embedding fingerprint is checked (``EMBED_MISMATCH_POLICY``). The CLI opens
    with ``startup=False``: it never blocks.
    """
    async with open_store(resolve_settings(settings, overrides)) as store:
        if startup:
            await run_startup_checks(store)
        memory = Memory(store)
        try:
            yield memory
        finally:
            await memory.trail.flush()  # the last turn's access log, before the pool closes
