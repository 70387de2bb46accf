"""The public entry point: :func:`open_memory` and the :class:`Memory` object it yields.

Adapters (the NoneBot plugin, the AmritaBot adapter, users' own code) use exactly this:

    async with open_memory() as mem:
        ctx = ToolContext(platform="qq", user_id="10001", group_id=None, roles=frozenset())
        reply = await mem.call_tool("write_memory", {...}, ctx)   # the JSON text the LLM sees
        schemas = mem.tool_schemas()                               # OpenAI function-calling format
        block = await mem.memory_block(ctx)                        # per-turn system-prompt block
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import AsyncIterator, Mapping
from typing import Any

from amrita_memory_pg.domain.activity import resolve_timezone
from amrita_memory_pg.domain.memo import render_memo_block
from amrita_memory_pg.embedding.base import Embedder
from amrita_memory_pg.errors import ConfigError
from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.storage.activity import ActivityStore
from amrita_memory_pg.storage.index import PgvectorIndex, VectorIndex
from amrita_memory_pg.storage.memories import MemoryStore
from amrita_memory_pg.storage.memos import MemoStore
from amrita_memory_pg.storage.pg.database import Database
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.memo import register_memo_tools
from amrita_memory_pg.tools.memory import register_memory_tools
from amrita_memory_pg.tools.registry import ToolRegistry


def create_index(settings: Settings) -> VectorIndex:
    """The configured vector backend (chroma is imported only when chosen)."""
    if settings.vector_backend == "pgvector":
        return PgvectorIndex(settings.retrieval.ann_candidates)
    if settings.vector_backend == "chroma":
        if importlib.util.find_spec("chromadb") is None:
            raise ConfigError(
                "vector_backend = chroma needs chromadb: pip install 'amrita-memory-pg[chroma]'"
            )
        from amrita_memory_pg.storage.chroma import ChromaIndex

        return ChromaIndex(settings)
    raise ConfigError(f"vector backend {settings.vector_backend!r} is not available in this build")


class Memory:
    """One open memory store: database pool, embedder, vector backend and the tools."""

    def __init__(
        self, settings: Settings, database: Database, embedder: Embedder, index: VectorIndex
    ) -> None:
        self.settings = settings
        self.database = database
        self.embedder = embedder
        self.index = index
        self.memories = MemoryStore(database.pool, embedder, index, settings)
        self.tools = ToolRegistry()
        register_memory_tools(self.tools, self.memories, settings)
        #: L1 memos; the cap is enforced by the database write
        self.memos = MemoStore(database.pool, settings.memo_max_chars)
        #: chat log + activity heatmap, written by the chat hooks, read by L3
        self.activity = ActivityStore(
            database.pool,
            keep=settings.chat_log_keep,
            tz=resolve_timezone(settings.subconscious.idle_timezone),
        )
        register_memo_tools(self.tools, self.memos, settings)

    @property
    def pool(self) -> Any:
        return self.database.pool

    def tool_schemas(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        """The tools' schemas in OpenAI function-calling format."""
        return self.tools.schemas(names)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | str | None, ctx: ToolContext
    ) -> str:
        """Run one tool for the speaker in ``ctx``; returns the JSON reply, never raises."""
        return await self.tools.call(name, arguments, ctx)

    async def after_reindex(self) -> None:
        """After the vectors changed model: re-sync a secondary index and rebuild ANN indexes."""
        from amrita_memory_pg.storage.memories import maintain_ann_indexes

        rebuild = getattr(self.index, "rebuild", None)
        if rebuild is not None:
            await rebuild(self.pool)
        retrieval = self.settings.retrieval
        await maintain_ann_indexes(
            self.pool,
            min_rows=retrieval.ann_min_rows,
            m=retrieval.hnsw_m,
            ef_construction=retrieval.hnsw_ef_construction,
        )

    async def startup(self) -> None:
        """What a bot runs once before serving: key migration, then the fingerprint check.

        The fingerprint check follows ``EMBED_CHECK_ON_STARTUP`` / ``EMBED_MISMATCH_POLICY``
        and may raise :class:`~amrita_memory_pg.embedding.startup.FingerprintRefused`.
        """
        from amrita_memory_pg.domain.keys import KEY_FORMAT_VERSION
        from amrita_memory_pg.embedding.startup import check_fingerprint
        from amrita_memory_pg.storage.keys import key_format_version, migrate_keys

        if await key_format_version(self.pool) != KEY_FORMAT_VERSION:
            await migrate_keys(self.pool)
        if self.settings.embedding.check_on_startup:
            await self.embedder.prepare()
            await check_fingerprint(self)

    async def memory_block(self, ctx: ToolContext) -> str:
        """The per-turn system-message text for the speaker in ``ctx`` ("" = inject nothing).

        Private chat: the personal memo. Group chat: the group memo, plus the speaker's
        personal memo in its own block when ``memo_inject_personal_in_group`` is on.
        One indexed query.
        """
        personal = ctx.in_group and self.settings.memo_inject_personal_in_group
        keys = [ctx.session_key, ctx.personal_key] if personal else [ctx.session_key]
        memos = await self.memos.get_many(keys)
        return render_memo_block(
            memos.get(ctx.session_key, ""),
            memos.get(ctx.personal_key) if personal else None,
            speaker=ctx.user_id,
        )

    async def close(self) -> None:
        try:
            await self.index.aclose()
            await self.embedder.aclose()
        finally:
            await self.database.close()


@contextlib.asynccontextmanager
async def open_memory(
    settings: Settings | None = None, *, startup: bool = True
) -> AsyncIterator[Memory]:
    """Open the store: settings from config/env when not given; embedded defaults when unset.

    With ``startup`` (the default, what a bot wants) the schema is migrated, legacy
    partition keys are converted and the embedding fingerprint is checked
    (``EMBED_MISMATCH_POLICY``). The CLI opens with ``startup=False``: it never blocks.
    """
    from amrita_memory_pg.embedding.factory import create_embedder

    settings = settings if settings is not None else load_settings()
    embedder = create_embedder(settings.embedding)
    try:
        index = create_index(settings)
        database = await Database.open(settings)
    except BaseException:
        await embedder.aclose()
        raise
    memory = Memory(settings, database, embedder, index)
    try:
        if startup:
            await memory.startup()
        yield memory
    finally:
        await memory.close()
