"""A runnable console bot with this plugin: ``python bot.py`` (what ``make run`` runs).

It lives outside the package because the plugin module
(``amrita_memory_pg.integrations.nonebot.amrita_memory_pg``) needs NoneBot initialised.

NoneBot2 + nonebot-adapter-console (a terminal chat UI) + this plugin on the embedded
defaults: PostgreSQL in ``data/amrita_memory_pg``, the default embedder, no LLM. The
``/memory`` commands work as they are (a plain message gets a hint saying so); with
``LLM_BASE_URL`` and ``LLM_MODEL`` (and ``LLM_API_KEY``) set, the built-in responder chats
with memory. A ``.env`` in the working
directory is read as NoneBot always does. The console's user (id ``user``) is made a
superuser unless ``SUPERUSERS`` is configured, so every command can be tried.

It exits within seconds on SIGTERM, SIGHUP or when its terminal goes away, and stops
the embedded server it started when no other process uses it
(:mod:`amrita_memory_pg.integrations.exit_guard`).
"""

from __future__ import annotations

import os
import sys

# At module level: the handler's annotation is a string (postponed annotations), which
# NoneBot resolves in this module's globals; imported inside the function it was unknown,
# and the hint handler never ran.
from nonebot.adapters import Event

PLUGIN = "amrita_memory_pg.integrations.nonebot.amrita_memory_pg"
CONSOLE_USER = "user"


def main() -> int:
    import nonebot
    from nonebot.adapters.console import Adapter as ConsoleAdapter

    from amrita_memory_pg.integrations.exit_guard import ExitGuard

    # No web server is needed for a console bot; a DRIVER in the environment wins.
    nonebot.init(driver=os.environ.get("DRIVER", "~none"))
    driver = nonebot.get_driver()
    # First start-up hook, so it is in place before the database opens: exit within
    # seconds on SIGTERM, SIGHUP or a closed terminal, leaving the embedded server.
    driver.on_startup(ExitGuard().install)
    if not driver.config.superusers:
        driver.config.superusers = {CONSOLE_USER}
    driver.register_adapter(ConsoleAdapter)
    if nonebot.load_plugin(PLUGIN) is None:
        print(f"could not load {PLUGIN}; see the error above", file=sys.stderr)
        return 2
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import chat_responder

    if chat_responder is None:
        _hint_without_llm(tuple(s for s in driver.config.command_start if s))
    nonebot.run()
    return 0


#: the console bot's answer to a plain message when no LLM is configured: without it a
#: new user's first "你好" got no reply at all and no idea why
NO_LLM_HINT = (
    "（没有配置 LLM，只有 /memory 命令会回答：试试 /memory user add 我喜欢猫、"
    "/memory user search 猫、/memory。要聊天，设置 LLM_BASE_URL、LLM_MODEL 和 LLM_API_KEY"
    "（任何 OpenAI 兼容的接口）后重新 make run。）"
)


def _hint_without_llm(command_starts: tuple[str, ...]) -> None:
    """Answer a plain message (not a command) with :data:`NO_LLM_HINT`; last in line, so
    any other plugin's answer comes first and blocks it."""
    from nonebot import on_message

    hint = on_message(priority=99, block=False)

    @hint.handle()
    async def _hint(event: Event) -> None:
        text = event.get_plaintext().strip()
        if text and not (command_starts and text.startswith(command_starts)):
            await hint.send(NO_LLM_HINT)


if __name__ == "__main__":
    sys.exit(main())
