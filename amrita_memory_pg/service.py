"""``Memory``: the composed product — repositories, services and the chat tools on one store.

Adapters (the NoneBot plugin, the AmritaBot adapter, users' own code) use exactly this,
opened by :func:`amrita_memory_pg.open_memory` (the composition module ``bootstrap``):

    async with open_memory() as mem:
        ctx = ToolContext(platform="qq", user_id="10001", group_id=None, roles=frozenset())
        reply = await mem.call_tool("write_memory", {...}, ctx)   # the JSON text the LLM sees
        schemas = mem.tool_schemas()                               # OpenAI function-calling format
        block = await mem.memory_block(ctx)                        # per-turn system-prompt block
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amrita_memory_pg.domain.activity import resolve_timezone
from amrita_memory_pg.domain.ports import ChatModel
from amrita_memory_pg.llm.chat import ChatClient, is_configured
from amrita_memory_pg.services.bot_memories import BotMemories, Speaker
from amrita_memory_pg.services.extraction import Extractor, endpoint
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage.activity import ActivityStore
from amrita_memory_pg.storage.bot_memories import BotMemoryStore
from amrita_memory_pg.storage.memories import MemoryRepository
from amrita_memory_pg.storage.memos import MemoStore
from amrita_memory_pg.tools.audiences import ToolDeps, audiences_for, compose_registries
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.registry import Audience, ToolRegistry


class Memory:
    """One open memory store: the store's parts, the repositories and the chat tools."""

    def __init__(self, store: Store) -> None:
        settings = store.settings
        self.store = store
        self.settings = settings
        self.database = store.database
        self.embedder = store.embedder
        self.backend = store.backend
        #: L2 memories: the service embeds, the repository writes and searches
        self.memories = MemoryService(
            MemoryRepository(
                store.pool,
                store.backend,
                cap=settings.per_session_memory_limit,
                acquire_timeout=settings.database.connect_timeout,
            ),
            store.embedder,
            settings,
        )
        #: L1 memos; the cap is enforced by the database write
        self.memos = MemoStore(
            store.pool, settings.memo_max_chars, acquire_timeout=settings.database.connect_timeout
        )
        #: chat log + activity heatmap, written by the chat hooks, read by L3
        self.activity = ActivityStore(
            store.pool,
            keep=settings.chat_log_keep,
            tz=resolve_timezone(settings.subconscious.idle_timezone),
        )
        #: issue 14: the per-turn block (memos + "## Bot Memories") and loaded scopes
        self.bot_memories = BotMemories(BotMemoryStore(store.pool), store.embedder, settings)
        #: issue 14: automatic extraction; its model only when extraction is enabled
        self.extraction_model: ChatModel | None = None
        if settings.extraction.enabled and is_configured(endpoint(settings)):
            self.extraction_model = ChatClient(endpoint(settings))
        self.extractor = Extractor(
            self.memories, self.bot_memories.store, self.extraction_model, settings
        )
        #: one tool registry per audience the settings call for (chat; L3 when enabled)
        self.registries: dict[Audience, ToolRegistry] = compose_registries(
            ToolDeps(
                memories=self.memories,
                memos=self.memos,
                settings=settings,
                bot_memories=self.bot_memories,
            ),
            audiences_for(settings),
        )
        #: the chat LLM's tools, served by :meth:`call_tool` and :meth:`tool_schemas`
        self.tools = self.registries["chat"]

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

    async def memory_block(self, ctx: ToolContext, message: str | None = None) -> str:
        """The per-turn system-message text for the speaker in ``ctx`` ("" = inject nothing).

        Private chat: the personal memo. Group chat: the group memo, plus the speaker's
        personal memo in its own block when ``memo_inject_personal_in_group`` is on.
        Then "## Bot Memories" (issue 14): global + current-scope memories when
        ``[injection] enabled``, and the scopes this chat loaded, within the token
        budget; ``message`` (the current one) adds the relevant top-k when configured.
        One SQL query.
        """
        speaker = Speaker(
            session_key=ctx.session_key,
            personal_key=ctx.personal_key,
            group_key=ctx.group_key,
            user_id=ctx.user_id,
        )
        return await self.bot_memories.block(speaker, message=message)

    async def close(self) -> None:
        try:
            if isinstance(self.extraction_model, ChatClient):
                await self.extraction_model.aclose()
            await self.backend.aclose()
            await self.embedder.aclose()
        finally:
            await self.database.close()
