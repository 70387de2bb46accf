"""Sending command replies: plain text, or the memo as a merged-forward message.

OneBot v11 (QQ) has merged-forward messages; elsewhere (the console adapter, …) and
whenever the forward call fails, the memo goes out as plain text chunks.
"""

from __future__ import annotations

import logging
from typing import Any

from nonebot import get_bots
from nonebot.adapters import Bot, Event

from amrita_memory_pg.commands.memory_command import MemoReply, Reply, TextReply
from amrita_memory_pg.domain.consolidation import key_subject

log = logging.getLogger(__name__)

FORWARD_ADAPTERS = frozenset({"OneBot V11"})


def forward_nodes(bot: Bot, reply: MemoReply) -> list[dict[str, Any]]:
    return [
        {"type": "node", "data": {"name": reply.title, "uin": str(bot.self_id), "content": chunk}}
        for chunk in reply.chunks
    ]


async def send_forward(bot: Bot, event: Event, reply: MemoReply) -> bool:
    """Send ``reply`` as one merged-forward message; False if unsupported or refused."""
    if bot.adapter.get_name() not in FORWARD_ADAPTERS:
        return False
    nodes = forward_nodes(bot, reply)
    group_id = getattr(event, "group_id", None)
    try:
        if group_id:
            await bot.call_api("send_group_forward_msg", group_id=group_id, messages=nodes)
        else:
            user_id = getattr(event, "user_id", None) or event.get_user_id()
            await bot.call_api("send_private_forward_msg", user_id=user_id, messages=nodes)
    except Exception:  # fall back to plain text, as the reference does
        log.warning("merged-forward memo failed; sending plain text instead", exc_info=True)
        return False
    return True


async def send_reply(bot: Bot, event: Event, reply: Reply) -> None:
    if isinstance(reply, TextReply):
        await bot.send(event, reply.text)
        return
    if await send_forward(bot, event, reply):
        return
    for chunk in reply.chunks:
        await bot.send(event, chunk)


async def send_private(target_key: str, text: str) -> None:
    """The L3 loop's proactive message, sent at once as a private message to the user of
    a personal partition through the first connected OneBot v11 bot (as the reference
    did); raises when there is none or the call fails (the message is kept and retried).
    The on_called_api hook logs it in the chat log like any other bot message."""
    user_id = key_subject(target_key)
    if not user_id.isdigit():
        raise ValueError(f"not a QQ user: {target_key}")
    for bot in get_bots().values():
        if bot.adapter.get_name() in FORWARD_ADAPTERS:
            await bot.call_api("send_private_msg", user_id=int(user_id), message=text)
            return
    raise RuntimeError("没有已连接的 OneBot V11 机器人，无法发送私聊消息")
