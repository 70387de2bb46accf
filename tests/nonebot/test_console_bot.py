"""The README's main job: the console bot starts and answers ``/memory`` commands."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from amrita_memory_pg.storage.pg.embedded import pid_alive, postmaster_pid
from tests.nonebot.console_process import ConsoleBotProcess


async def test_console_bot_starts_and_answers_memo_and_usage(db_dsn: str, tmp_path: Path) -> None:
    bot = ConsoleBotProcess(
        cwd=tmp_path,
        env={"DATABASE_URL": db_dsn, "EMBEDDING_PROCTOL": "hash"},
    )
    try:
        bot.wait_for("Nonebot", timeout=90)
        bot.wait_for("Send Message")
        bot.pump(2)
        # a clean start: no handler NoneBot could not parse (its warning came with a traceback)
        assert b"Traceback" not in bot.output
        assert b"Unknown ForwardRef" not in bot.output
        bot.focus_input()
        # no LLM: a plain message is answered with what works (it used to get nothing)
        bot.type_line("你好")
        bot.wait_for("没有配置 LLM")
        bot.type_line("/memory memo")
        bot.wait_for("当前作用域还没有备忘录")
        bot.type_line("/memory")
        bot.wait_for("添加群共享记忆")
        # the whole usage, its first line too (a loaded machine may paint it in steps)
        screen = bot.wait_for("用法:", timeout=30)
        assert "添加群共享记忆" in screen
    finally:
        bot.stop()
    assert (tmp_path / "data").exists() is False  # the external test database was used


# ------------------------------------------------- exit on SIGTERM, SIGHUP, closed terminal


@pytest.fixture(scope="module")
def bot_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One working directory (embedded data in data/) shared by the exit tests: one initdb."""
    return tmp_path_factory.mktemp("console_home")


def _handles(pgdata: Path) -> list[int]:
    try:
        return list(json.loads((pgdata / ".handle_pids.json").read_text()))
    except (OSError, ValueError):
        return []


def _start_on_embedded(home: Path) -> tuple[ConsoleBotProcess, int]:
    """The README's bot on the embedded default, up; returns it and the postmaster pid."""
    bot = ConsoleBotProcess(cwd=home, env={"EMBEDDING_PROCTOL": "hash"})
    pgdata = home / "data" / "amrita_memory_pg" / "pg"
    try:
        bot.wait_for("Send Message", timeout=90)
        deadline = time.monotonic() + 90
        while bot.proc.pid not in _handles(pgdata):  # the bot holds the embedded server
            assert time.monotonic() < deadline, "the bot never joined the embedded server"
            assert bot.proc.poll() is None, bot.text()
            bot.pump(0.3)
        bot.wait_for("(schema migrated", timeout=60)  # the plugin is up
    except BaseException:
        bot.stop()
        raise
    pid = postmaster_pid(pgdata)
    assert pid is not None
    return bot, pid


#: Seconds the bot and then its server get to be gone. The guard ends the process 2 s after
#: the request at the latest (3 s when a graceful stop holds the servers' lock: the forced
#: exit no longer waits for it); the server's own shutdown checkpoint on a fresh cluster
#: (every migration's files to fsync) took over 5 s once on a busy disk (CI, after the main
#: suite), and once, right after the main suite had run in two processes, the idle bot was
#: still there 10 s after SIGTERM, waiting for that stop's lock. What this guards against is
#: a process that never exits or spins on a dead terminal, which no bound of seconds lets
#: through.
EXIT_SECONDS = 20


def _assert_exits_and_server_stops(bot: ConsoleBotProcess, postmaster: int, since: float) -> None:
    """The bot is gone within EXIT_SECONDS of ``since``, without spinning, and so is the
    postmaster."""
    process = psutil.Process(bot.proc.pid)
    cpu: list[float] = []
    while bot.proc.poll() is None and time.monotonic() - since < EXIT_SECONDS:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            cpu.append(times.user + times.system)
        time.sleep(0.1)
    elapsed = time.monotonic() - since
    assert bot.proc.poll() is not None, (
        f"still running {elapsed:.1f} s later; cpu {cpu[-5:]}; screen: {bot.text()[-2000:]}"
    )
    assert elapsed <= EXIT_SECONDS
    while pid_alive(postmaster) and time.monotonic() - since < EXIT_SECONDS:
        time.sleep(0.1)
    assert not pid_alive(postmaster), "the embedded server the bot started is still running"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_console_bot_exits_on_a_signal_and_stops_its_server(
    bot_home: Path, sig: signal.Signals
) -> None:
    bot, postmaster = _start_on_embedded(bot_home)
    try:
        os.kill(bot.proc.pid, sig)
        _assert_exits_and_server_stops(bot, postmaster, time.monotonic())
    finally:
        bot.stop()


def test_console_bot_exits_when_its_terminal_is_closed(bot_home: Path) -> None:
    bot, postmaster = _start_on_embedded(bot_home)
    try:
        bot.close_terminal()  # tmux kill-session: no signal reaches the bot, its tty hangs up
        _assert_exits_and_server_stops(bot, postmaster, time.monotonic())
    finally:
        bot.stop()
