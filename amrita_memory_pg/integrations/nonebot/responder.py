"""The built-in responder: a plain NoneBot bot chats with memory when an LLM is configured.

Off when Amrita handles the chat (``nonebot_plugin_amrita`` importable, or ``amrita_core``
loaded in this process — the ``amrita`` extra installs ``amrita_core`` as a library, so
mere importability of the library does not count) and off without ``LLM_BASE_URL`` /
``LLM_MODEL``. It answers messages addressed to the bot that are not commands.
"""

from __future__ import annotations

import importlib.util
import logging
import sys

from nonebot import get_driver, get_plugin, on_message
from nonebot.adapters import Bot, Event
from nonebot.matcher import Matcher
from nonebot.rule import to_me

from amrita_memory_pg.integrations.nonebot.context import tool_context
from amrita_memory_pg.integrations.nonebot.runtime import Runtime
from amrita_memory_pg.llm.chat import is_configured
from amrita_memory_pg.responder import HISTORY_LINES, history_messages, respond
from amrita_memory_pg.settings import Settings

log = logging.getLogger(__name__)

PRIORITY = 90
FAILURE_TEXT = "（抱歉，我现在连不上语言模型，请稍后再试）"


def amrita_present() -> bool:
    """Whether AmritaBot answers chats in this process (then it injects memory itself)."""
    if get_plugin("nonebot_plugin_amrita") is not None or "amrita_core" in sys.modules:
        return True
    return importlib.util.find_spec("nonebot_plugin_amrita") is not None


def responder_enabled(settings: Settings) -> bool:
    return is_configured(settings.llm) and not amrita_present()


def register_responder(runtime: Runtime) -> type[Matcher]:
    chat = on_message(rule=to_me(), priority=PRIORITY, block=True)
    command_starts = tuple(s for s in get_driver().config.command_start if s)

    @chat.handle()
    async def _answer(bot: Bot, event: Event, matcher: Matcher) -> None:
        text = event.get_plaintext().strip()
        if not text or (command_starts and text.startswith(command_starts)) or amrita_present():
            return
        memory, client = runtime.memory, runtime.llm
        if memory is None or client is None:
            return
        try:
            ctx = await tool_context(bot, event)
            lines = await memory.activity.recent(ctx.session_key, HISTORY_LINES)
            answer = await respond(
                memory, client, ctx, text, history=history_messages(lines, ctx, text)
            )
            # OneBot sends are logged by the on_called_api hook; log the others here.
            if answer and bot.adapter.get_name() != "OneBot V11":
                await memory.activity.record_bot_message(
                    session_key=ctx.session_key,
                    bot_id=str(bot.self_id),
                    group_id=ctx.group_id,
                    text=answer,
                )
        except Exception:  # the matcher's outer edge
            log.exception("the built-in responder failed")
            answer = FAILURE_TEXT
        if not answer:
            return
        await matcher.send(answer)

    return chat
