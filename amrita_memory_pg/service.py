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
from amrita_memory_pg.domain.memo import render_memo_block
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.services.scheduling import SchedulingService
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage.activity import ActivityStore
from amrita_memory_pg.storage.l3_state import L3StateStore
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
        tz = resolve_timezone(settings.subconscious.idle_timezone)
        self.activity = ActivityStore(store.pool, keep=settings.chat_log_keep, tz=tz)
        #: L3 scheduling per target (penalty, planner, next run); set ``scheduling.runner``
        #: to the loop's cycle runner
        self.scheduling = SchedulingService(
            L3StateStore(store.pool, tz_name=str(tz)), self.activity, settings
        )
        #: one tool registry per audience the settings call for (chat; L3 when enabled)
        self.registries: dict[Audience, ToolRegistry] = compose_registries(
            ToolDeps(memories=self.memories, memos=self.memos, settings=settings),
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
            await self.backend.aclose()
            await self.embedder.aclose()
        finally:
            await self.database.close()
