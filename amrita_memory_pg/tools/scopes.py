"""``memory_load_context`` / ``memory_unload_context``: load another scope's
memories, read-only, into the current chat — e.g. a group's in a private chat.

A loaded scope is remembered in PostgreSQL for the chat (``loaded_scope``, keyed by the
chat's session key) until it is unloaded or the session expires (the session job), and
its memories are injected every turn in the "## Bot Memories" block, named as loaded.
Nothing can be written through it. Who may load what:

* ``group:<群号>``: members and admins of that group — the membership port
  (:class:`~amrita_memory_pg.services.bot_memories.Membership`: the adapter asks the
  platform; by default, whoever has spoken in the group's kept chat log) — and
  superusers. Anyone else is refused, and nothing is loaded.
* ``user``: the speaker's own personal memories (useful in a group chat).
* ``global``: readable by everyone; already injected every turn when injection is on.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from amrita_memory_pg.domain.errors import ToolError
from amrita_memory_pg.domain.keys import GLOBAL_KEY, group_key
from amrita_memory_pg.services.bot_memories import BotMemories
from amrita_memory_pg.tools.args import Text, ToolArgs
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.memory import paused_write
from amrita_memory_pg.tools.registry import ToolRegistry, declare, declared
from amrita_memory_pg.usecases.memories import MemoryCases

PREVIEW_ITEMS = 20
_GROUP = re.compile(r"^\s*group\s*[:：]\s*(?P<id>[0-9A-Za-z_.-]{1,64})\s*$")

ScopeSpec = Annotated[
    Text,
    Field(
        description="作用域：group:<群号>（该群的群共享记忆，仅该群成员可装载）、user（你自己的个人记忆）、global（全局记忆）",
        max_length=80,
    ),
]


class LoadContextArgs(ToolArgs):
    scope: ScopeSpec


class UnloadContextArgs(ToolArgs):
    scope: ScopeSpec


def scope_key_of(spec: str, ctx: ToolContext) -> tuple[str, str | None]:
    """(partition key, group id or None) a scope spec names; ToolError when it names none."""
    text = spec.strip()
    if text == "global":
        return GLOBAL_KEY, None
    if text == "user":
        return ctx.personal_key, None
    match = _GROUP.match(text)
    if match:
        gid = match.group("id")
        return group_key(ctx.platform, gid), gid
    if text == "group" and ctx.group_id:
        return group_key(ctx.platform, ctx.group_id), ctx.group_id
    raise ToolError(
        f"无法识别的 scope：{text[:40]!r}；可用 group:<群号>、user 或 global（例如 group:123456）"
    )


class ScopeTools:
    """Load / unload a scope; neither the chat nor the scope may be paused."""

    def __init__(self, bot: BotMemories, memories: MemoryCases) -> None:
        self.bot = bot
        self.memories = memories

    @declare(
        "memory_load_context",
        "把另一个作用域的记忆以只读方式装载进当前对话（例如在私聊中装载某个群的记忆），"
        "本会话之后每轮注入；仅该群成员或管理员可装载群记忆。",
        "装载记忆失败",
        on_paused=paused_write("装载"),
    )
    async def load(self, args: LoadContextArgs, ctx: ToolContext) -> dict[str, Any]:
        key, gid = scope_key_of(args.scope, ctx)
        await self.memories.gate.check(ctx.session_key)
        if key == ctx.session_key:
            raise ToolError("这就是当前对话的作用域，它的记忆本来就可用，无需装载")
        if key == GLOBAL_KEY:
            raise ToolError(
                "全局记忆无需装载：开启记忆注入时每轮都会注入；也可以用 read_memory(scope=global) 检索"
            )
        if gid is not None and not ctx.is_superuser:
            allowed = await self.bot.membership.check(ctx.platform, ctx.user_id, gid)
            if not allowed:
                raise ToolError(
                    f"无权装载群 {gid} 的记忆：只有该群的成员或管理员可以装载（未确认你是该群成员）。没有装载任何内容"
                )
        records, total = await self.memories.page(key, limit=PREVIEW_ITEMS, offset=0)
        await self.bot.load(ctx.session_key, key, ctx.user_id)
        return {
            "status": "success",
            "scope": key,
            "total": total,
            "memories": [
                {
                    "id": r.id,
                    "content": r.content,
                    "category": r.category,
                    "importance_level": r.importance,
                }
                for r in records
            ],
            "message": (
                f"已以只读方式装载 {key} 的 {total} 条记忆：本会话之后每轮都会注入（只读，不能通过它写入）；"
                "用 memory_unload_context 卸载，会话过期时自动卸载"
            ),
        }

    @declare(
        "memory_unload_context",
        "卸载之前用 memory_load_context 装载的作用域。",
        "卸载记忆失败",
        on_paused=paused_write("卸载"),
    )
    async def unload(self, args: UnloadContextArgs, ctx: ToolContext) -> dict[str, Any]:
        key, _gid = scope_key_of(args.scope, ctx)
        await self.memories.gate.check(ctx.session_key)
        if not await self.bot.unload(ctx.session_key, key):
            loaded = await self.bot.loaded(ctx.session_key)
            shown = "、".join(loaded) or "（无）"
            raise ToolError(f"{key} 没有装载在当前对话中；已装载：{shown}")
        return {"status": "success", "scope": key, "message": f"已卸载 {key}"}


def register_scope_tools(
    registry: ToolRegistry, bot: BotMemories, memories: MemoryCases
) -> ScopeTools:
    tools = ScopeTools(bot, memories)
    registry.register(declared(tools.load))
    registry.register(declared(tools.unload))
    return tools
