"""``/memory memo``: the current scope's memo, read-only."""

from __future__ import annotations

from functools import partial

from amrita_memory_pg.commands.memory_command.base import Answer, MemoReply, Services, Step
from amrita_memory_pg.domain.text import pack_chunks
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.usecases.memos import MemoCases

#: what an empty memo is and how one comes to be: "there is none" alone left a new user
#: with nothing to do (one of the three commands the README suggests first)
EMPTY_MEMO = (
    "当前作用域还没有备忘录。备忘录是每轮对话都会注入的一段简短说明（称呼、偏好、约定等），"
    "由聊天模型用 update_memo 工具写下（需要配置 LLM），管理员也可以在管理页面的「备忘录」里编辑；"
    "单条事实请用 /memory user add <内容> 记为记忆。"
)


def show_memo(services: Services, ctx: ToolContext) -> Step:
    return Step("memo", ctx.session_key, partial(_memo, services.cases.memos, ctx.session_key))


async def _memo(memos: MemoCases, session_key: str) -> Answer:
    memo = await memos.read(session_key)
    if not memo.content:
        return EMPTY_MEMO
    return MemoReply(title="备忘录", chunks=tuple(pack_chunks(memo.content)))
