"""A runnable console bot with this plugin: ``python bot.py`` (what ``make run`` runs).

It lives outside the package because the plugin module
(``amrita_memory_pg.integrations.nonebot.amrita_memory_pg``) needs NoneBot initialised.

NoneBot2 + nonebot-adapter-console (a terminal chat UI) + this plugin on the embedded
defaults: PostgreSQL in ``data/amrita_memory_pg``, the default embedder, no LLM. The
``/memory`` commands work as they are; with ``LLM_BASE_URL`` and ``LLM_MODEL`` (and
``LLM_API_KEY``) set, the built-in responder chats with memory. A ``.env`` in the working
directory is read as NoneBot always does. The console's user (id ``user``) is made a
superuser unless ``SUPERUSERS`` is configured, so every command can be tried.

It exits within seconds on SIGTERM, SIGHUP or when its terminal goes away, and stops
the embedded server it started when no other process uses it
(:mod:`amrita_memory_pg.integrations.exit_guard`).
"""

from __future__ import annotations

import os
import sys

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
    nonebot.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
