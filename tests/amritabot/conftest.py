"""The real AmritaBot (amrita 1.13.1 from PyPI) with this plugin, once for the session.

An AmritaBot project is written to a temporary directory (:mod:`tests.amritabot.host`), the
host starts the way its ``bot.py`` does — ``amrita.init(); amrita.load_plugins()``, its own
plugin manager reading ``[tool.amrita] plugins`` — and runs its start-up (NoneBot's
lifespan: the ORM, the chat plugin's config and presets, our plugin's database). A OneBot
v11 bot object is connected; QQ is the recording :class:`~tests.amritabot.host.QQ`, the
host's model a stub behind the host's own preset file. Every test starts from empty
memory tables, an empty script and no recorded calls.

This is a pytest session of its own, in its own venv (``make amritabot-test``): AmritaBot
initialises NoneBot for the process and, once installed, makes every NoneBot test see an
AmritaBot host (the built-in responder stands down), which the other sessions must not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.amritabot.host import BOT_QQ, QQ, USAGE, HostLLM, write_project
from tests.support.pg import PgServer


@dataclass
class Host:
    root: Path
    bot: Any
    qq: QQ
    llm: HostLLM
    runtime: Any
    dsn: str
    #: every log line of the process since before start-up (loguru and stdlib)
    log: list[str] = field(default_factory=list)

    async def send(self, event: Any) -> None:
        """Hand a OneBot event to NoneBot, as the adapter does for QQ's."""
        import nonebot

        await nonebot.message.handle_event(self.bot, event)


@contextlib.asynccontextmanager
async def running(lifespan: Any) -> AsyncIterator[None]:
    """The host's lifespan in a task of its own: its task group is entered and left by
    the same task (anyio requires it), while the tests run beside it."""
    started, stop = asyncio.Event(), asyncio.Event()
    failed: list[BaseException] = []

    async def run() -> None:
        try:
            await lifespan.startup()
        except BaseException as exc:
            failed.append(exc)
            started.set()
            raise
        started.set()
        await stop.wait()
        await lifespan.shutdown()

    task = asyncio.create_task(run())
    await started.wait()
    if failed:
        raise failed[0]
    try:
        yield
    finally:
        stop.set()
        await task


@pytest.fixture(scope="session")
async def host(
    pg_server: PgServer, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Host]:
    name = await pg_server.create_database(template=template_db)
    dsn = pg_server.dsn(name)
    root = tmp_path_factory.mktemp("amritabot")
    llm = HostLLM().start()
    llm.usage = USAGE
    write_project(root, database_url=dsn, stub_url=llm.base_url)
    home = Path.cwd()
    # AmritaBot finds its project in the working directory; its web UI wants `uv` on PATH
    os.chdir(root)
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    try:
        import amrita
        import nonebot
        from nonebot.adapters.onebot.v11 import Adapter, Bot

        amrita.init()
        lines: list[str] = []
        nonebot.logger.add(lambda m: lines.append(str(m.record["message"])), level="INFO")
        amrita.load_plugins()
        driver = nonebot.get_driver()
        async with running(driver._lifespan):
            adapter = nonebot.get_adapter(Adapter)
            qq = QQ()
            adapter._call_api = qq.call_api  # type: ignore[method-assign]
            bot = Bot(adapter, str(BOT_QQ))
            driver._bot_connect(bot)
            from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

            try:
                yield Host(root, bot, qq, llm, runtime, dsn, lines)
            finally:
                driver._bot_disconnect(bot)
    finally:
        os.chdir(home)
        llm.stop()
        await pg_server.drop_database(name)


@pytest.fixture(autouse=True)
async def clean(host: Host) -> AsyncIterator[None]:
    memory = host.runtime.require()
    await memory.pool.execute(
        "TRUNCATE amrita_memory.memo, amrita_memory.memory, amrita_memory.chat_log, "
        "amrita_memory.activity_heatmap, amrita_memory.pending_message, "
        "amrita_memory.token_usage, amrita_memory.consolidation_cycle CASCADE"
    )
    host.llm.reset()
    host.qq.calls.clear()
    logging.getLogger("amrita_memory_pg").setLevel(logging.INFO)
    return
