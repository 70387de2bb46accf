"""``/memory memo``: the current scope's memo, read-only."""

from __future__ import annotations

from functools import partial

from amrita_memory_pg.commands.memory_command.base import Answer, MemoReply, Services, Step
from amrita_memory_pg.domain.text import pack_chunks
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.usecases.memos import MemoCases


def show_memo(services: Services, ctx: ToolContext) -> Step:
    return Step("memo", ctx.session_key, partial(_memo, services.cases.memos, ctx.session_key))


async def _memo(memos: MemoCases, session_key: str) -> Answer:
    memo = await memos.read(session_key)
    if not memo.content:
        return "当前作用域还没有备忘录"
    return MemoReply(title="备忘录", chunks=tuple(pack_chunks(memo.content)))
