"""Sending command replies: plain text, or the memo as a merged-forward message.

OneBot v11 (QQ) has merged-forward messages; elsewhere (the console adapter, …) and
whenever the forward call fails, the memo goes out as plain text chunks.
"""

from __future__ import annotations

import logging
from typing import Any

from nonebot.adapters import Bot, Event

from amrita_memory_pg.commands.memory_command import MemoReply, Reply, TextReply
from amrita_memory_pg.storage.consolidation import PendingMessage

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


async def send_pending(bot: Bot, event: Event, messages: list[PendingMessage]) -> None:
    """The L3 loop's proactive messages, oldest first, in the chat the event came from (a
    private chat: :meth:`Memory.pending_for` returns nothing elsewhere). They were already
    marked delivered, so a failed send is logged, not retried (at most once)."""
    for message in messages:
        try:
            await bot.send(event, message.content)
        except Exception:
            log.warning("a proactive message (id %s) could not be sent", message.id, exc_info=True)
