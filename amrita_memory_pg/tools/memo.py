"""L1 memo tools: ``read_memo``, ``append_memo``, ``update_memo`` (reference §4.6–4.8).

Names, descriptions, arguments and JSON replies follow the reference so prompts written
for it keep working. The memo is the chat's session memo (§2.3): the group's in a group
chat, else the speaker's. A refused write (over ``memo_max_chars``) returns the
reference's message plus the current length, and leaves the old memo intact. A paused
scope's memo is neither read nor written: the memory tools' paused replies.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from amrita_memory_pg.domain.errors import MemoTooLong, ToolError
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.tools.args import Text, ToolArgs
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.memory import paused_read, paused_write
from amrita_memory_pg.tools.registry import Tool, ToolRegistry
from amrita_memory_pg.usecases.memos import MemoCases


def too_long_error(exc: MemoTooLong) -> ToolError:
    """The reference's message, then the current length, so the LLM knows how much to cut."""
    return ToolError(
        f"{exc}（当前备忘录 {exc.current_chars} 字，上限 {exc.limit} 字）",
        current_chars=exc.current_chars,
        max_chars=exc.limit,
    )


class ReadMemoArgs(ToolArgs):
    pass


class AppendMemoArgs(ToolArgs):
    content: Annotated[Text, Field(description="要追加的文本，与原有内容以换行分隔")]


class UpdateMemoArgs(ToolArgs):
    content: Annotated[Text, Field(description="备忘录的新全文（替换旧内容）")]


def register_memo_tools(registry: ToolRegistry, memos: MemoCases, settings: Settings) -> None:
    """Declare the three memo tools on ``registry``."""
    limit = settings.memo_max_chars

    async def read_memo(args: ReadMemoArgs, ctx: ToolContext) -> dict[str, Any]:
        memo = await memos.read(ctx.session_key)
        return {
            "status": "success",
            "memo": memo.content,
            "chars": memo.chars,
            "empty": memo.content == "",
        }

    async def append_memo(args: AppendMemoArgs, ctx: ToolContext) -> dict[str, Any]:
        addition = args.content.strip()
        if not addition:
            raise ToolError("追加内容为空")
        try:
            written = await memos.append(ctx.session_key, addition)
        except MemoTooLong as exc:
            raise too_long_error(exc) from exc
        return {
            "status": "success",
            "message": "备忘录已追加",
            "chars": written.chars,
            "appended": len(addition),
        }

    async def update_memo(args: UpdateMemoArgs, ctx: ToolContext) -> dict[str, Any]:
        content = args.content  # not stripped: "" clears the memo
        try:
            written = await memos.replace(ctx.session_key, content)
        except MemoTooLong as exc:
            raise too_long_error(exc) from exc
        return {"status": "success", "message": "备忘录已更新", "chars": written.chars}

    registry.register(
        Tool(
            name="read_memo",
            description=(
                "读取当前作用域备忘录（L1）的全文与字数。备忘录已自动注入系统提示词，"
                "仅在需要核对或回滚全文时调用。群聊中是群备忘录，私聊中是个人备忘录。"
            ),
            args=ReadMemoArgs,
            handler=read_memo,
            failure_prefix="读取备忘录失败",
            on_paused=paused_read,
            read_only=True,
        )
    )
    registry.register(
        Tool(
            name="append_memo",
            description=(
                "在当前作用域备忘录（L1）末尾追加一段文本。适合补充一条新的稳定事实；"
                f"追加后总长度不能超过 {limit} 字，超长会被拒绝，此时请用 update_memo 压缩全文后重试。"
            ),
            args=AppendMemoArgs,
            handler=append_memo,
            failure_prefix="追加备忘录失败",
            on_paused=paused_write("追加备忘录"),
        )
    )
    registry.register(
        Tool(
            name="update_memo",
            description=(
                f"整篇替换当前作用域备忘录（L1）。备忘录是常驻的简短用户档案（≤ {limit} 字），"
                "每轮对话都会注入，只放每次对话都需要的事实：身份、稳定偏好、用户要求的工具调用方式。"
                "调用前先读当前备忘录、融合新事实、提炼成陈述句后输出全文；具体事件与细节请用 "
                "write_memory 写入长期记忆，备忘录里只留指针。超长会被拒绝，请压缩后重试。"
                "传入空字符串会清空备忘录。"
            ),
            args=UpdateMemoArgs,
            handler=update_memo,
            failure_prefix="更新备忘录失败",
            on_paused=paused_write("更新备忘录"),
        )
    )
