"""A minimal chat responder with memory: what a plain bot without Amrita uses.

Each turn: a short system prompt, the memo block (:meth:`Memory.memory_block`) as a
system message, the recent chat lines, the user's message; the model may call the
memory tools (:meth:`Memory.tool_schemas` / :meth:`Memory.call_tool`) for at most
``max_rounds`` rounds, after which it must answer without tools.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from amrita_memory_pg.domain.ports import ChatModel, Message, TokenUsage
from amrita_memory_pg.domain.records import ChatLine
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import ToolContext

log = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 5
HISTORY_LINES = 12
SYSTEM_PROMPT = (
    "你是一个友好、简洁的聊天助手，拥有长期记忆工具。"
    "用户告诉你值得长期记住的事实时，用 write_memory 记下；需要回忆时先用 read_memory 检索。"
    "身份、稳定偏好这类每轮都要用到的事实放进备忘录（update_memo / append_memo）。"
    "不要向用户复述工具的 JSON 结果，用自然语言回答。"
)
EXHAUSTED = "（工具调用轮数已达上限，请换个说法再试）"


def history_messages(lines: Sequence[ChatLine], ctx: ToolContext, text: str) -> list[Message]:
    """Recent chat lines as chat messages, without the current message (sent last)."""
    lines = list(lines)
    if lines and lines[-1].role == "user" and lines[-1].text == text:
        lines = lines[:-1]
    out: list[Message] = []
    for line in lines:
        if line.role == "bot":
            out.append({"role": "assistant", "content": line.text})
        else:
            speaker = f"[{line.user_id}] " if ctx.in_group else ""
            out.append({"role": "user", "content": speaker + line.text})
    return out


async def respond(
    mem: Memory,
    client: ChatModel,
    ctx: ToolContext,
    text: str,
    *,
    history: Sequence[Message] = (),
    max_rounds: int = MAX_TOOL_ROUNDS,
) -> str:
    """The bot's answer to ``text``; tool errors go back to the model, never raise."""
    messages: list[Message] = [{"role": "system", "content": SYSTEM_PROMPT}]
    block = await mem.memory_block(ctx, text)
    if block:
        messages.append({"role": "system", "content": block})
    messages.extend(history)
    speaker = f"[{ctx.user_id}] " if ctx.in_group else ""
    messages.append({"role": "user", "content": speaker + text})
    tools = mem.tool_schemas()
    usage = TokenUsage()

    for _ in range(max_rounds):
        completion = await client.complete(messages, tools)
        usage += completion.usage
        reply = completion.message
        calls: list[dict[str, Any]] = list(reply.get("tool_calls") or [])
        if not calls:
            _log_usage(usage)
            return str(reply.get("content") or "").strip()
        messages.append(
            {"role": "assistant", "content": reply.get("content") or "", "tool_calls": calls}
        )
        for call in calls:
            function = call.get("function") or {}
            name = str(function.get("name", ""))
            arguments = function.get("arguments")
            if arguments is not None and not isinstance(arguments, str | dict):
                arguments = json.dumps(arguments)
            result = await mem.call_tool(name, arguments, ctx)
            log.debug("tool %s(%s) -> %s", name, arguments, result)
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result})

    final = await client.complete(messages, None)
    _log_usage(usage + final.usage)
    return str(final.message.get("content") or "").strip() or EXHAUSTED


def _log_usage(usage: TokenUsage) -> None:
    log.debug(
        "chat turn used %d tokens (%d prompt, %d completion)",
        usage.total_tokens,
        usage.prompt_tokens,
        usage.completion_tokens,
    )
