"""Building NoneBot events and bots for nonebug tests (OneBot v11 and the console)."""

from __future__ import annotations

import itertools
import time
from datetime import datetime
from typing import Any

from nonebot import get_adapter
from nonebot.adapters.console import Adapter as ConsoleAdapter
from nonebot.adapters.console import Bot as ConsoleBot
from nonebot.adapters.console import Message as ConsoleMessage
from nonebot.adapters.console.event import PrivateMessageEvent as ConsolePrivate
from nonebot.adapters.console.event import PublicMessageEvent as ConsolePublic
from nonebot.adapters.onebot.v11 import Adapter as OneBotAdapter
from nonebot.adapters.onebot.v11 import Bot as OneBotBot
from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message, PrivateMessageEvent
from nonebot.adapters.onebot.v11.event import Sender
from nonechat.model import DIRECT, Channel, Robot, User

BOT_QQ = "42"
_ids = itertools.count(1)


def qq_bot(ctx: Any) -> OneBotBot:
    """A nonebug bot on the real (patched) OneBot v11 adapter, so the platform is `qq`."""
    bot: OneBotBot = ctx.create_bot(
        base=OneBotBot, adapter=get_adapter(OneBotAdapter), self_id=BOT_QQ
    )
    return bot


def console_bot(ctx: Any) -> ConsoleBot:
    bot: ConsoleBot = ctx.create_bot(
        base=ConsoleBot, adapter=get_adapter(ConsoleAdapter), self_id=Robot("robot")
    )
    return bot


def _qq_message(text: str, user_id: int, to_me: bool) -> dict[str, Any]:
    """The fields a OneBot v11 message event has whether private or in a group."""
    return {
        "time": int(time.time()),
        "self_id": int(BOT_QQ),
        "post_type": "message",
        "user_id": user_id,
        "message_id": next(_ids),
        "message": Message(text),
        "original_message": Message(text),
        "raw_message": text,
        "font": 0,
        "to_me": to_me,
    }


def qq_private(text: str, user_id: int = 10001, *, to_me: bool = True) -> PrivateMessageEvent:
    return PrivateMessageEvent(
        **_qq_message(text, user_id, to_me),
        sub_type="friend",
        message_type="private",
        sender=Sender(user_id=user_id, nickname=f"u{user_id}"),
    )


def qq_group(
    text: str,
    user_id: int = 10001,
    group_id: int = 20002,
    *,
    role: str | None = "member",
    to_me: bool = False,
) -> GroupMessageEvent:
    return GroupMessageEvent(
        **_qq_message(text, user_id, to_me),
        sub_type="normal",
        message_type="group",
        sender=Sender(user_id=user_id, nickname=f"u{user_id}", role=role),
        group_id=group_id,
    )


def console_private(text: str, user_id: str = "user") -> ConsolePrivate:
    return ConsolePrivate(
        time=datetime.now(),  # noqa: DTZ005 (the console adapter's own convention)
        self_id="robot",
        post_type="message",
        user=User(user_id),
        channel=DIRECT,
        message_id=str(next(_ids)),
        message=ConsoleMessage(text),
        to_me=True,
    )


def console_public(text: str, user_id: str = "user", channel: str = "general") -> ConsolePublic:
    return ConsolePublic(
        time=datetime.now(),  # noqa: DTZ005
        self_id="robot",
        post_type="message",
        user=User(user_id),
        channel=Channel(channel, "通用"),
        message_id=str(next(_ids)),
        message=ConsoleMessage(text),
        to_me=True,
    )
