"""Make a bot process exit within seconds on SIGTERM, SIGHUP or a closed terminal.

Why this exists: the console bot (``make run``) draws a Textual UI. When its terminal
went away (a tmux session killed) nothing told the process: the terminal's SIGHUP goes
to the session leader only, Textual's input thread spun on the dead terminal at ~95 %
of a core, and a later SIGTERM was never handled because Textual's shutdown blocked the
event loop writing to that terminal. The embedded PostgreSQL it had started kept running.

The guard is driver-agnostic and needs no NoneBot:

- a watcher thread polls the process's terminal (fds 0–2 that were ttys at start) for
  a hang-up; when it is gone it sends the process SIGTERM, which every NoneBot driver
  handles as a graceful shutdown;
- SIGHUP is turned into that same SIGTERM;
- every exit request (signal or hang-up) also arms a deadline thread: if the process has
  not exited ``grace`` seconds later, it leaves the embedded server (stopping it when
  this process was its last user) and ends the process with ``os._exit``. That thread
  does not depend on the event loop, so a blocked loop cannot keep the process alive.

:meth:`ExitGuard.install` must run inside the running event loop after the driver has
installed its own signal handlers (a NoneBot startup hook is the place): it keeps them
and only adds to them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from amrita_memory_pg.storage.pg import embedded

log = logging.getLogger(__name__)

_SignalHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class ExitGuard:
    """Bounded exit for a long-running bot process (see the module docstring)."""

    def __init__(self, *, grace: float = 2.0, poll_interval: float = 0.2) -> None:
        self.grace = grace
        self.poll_interval = poll_interval
        self._armed = threading.Event()
        self._closed = threading.Event()
        self._previous: dict[int, _SignalHandler] = {}
        self._exit_code = 0
        self._ttys: list[int] = []

    async def install(self) -> None:
        """Hook the signals and start the terminal watcher (call from the running loop)."""
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self._previous[sig] = signal.getsignal(sig)
            signal.signal(sig, self._on_signal)
        self._ttys = [fd for fd in (0, 1, 2) if _isatty(fd)]
        if self._ttys:
            threading.Thread(
                target=self._watch_terminal, name="exit-guard-tty", daemon=True
            ).start()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.request_exit(128 + signum, f"signal {signal.Signals(signum).name}")
        if signum == signal.SIGHUP:
            os.kill(os.getpid(), signal.SIGTERM)  # the driver's graceful path
            return
        previous = self._previous.get(signum)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL and signum == signal.SIGINT:
            raise KeyboardInterrupt

    def request_exit(self, code: int, reason: str) -> None:
        """Start the deadline (once): past ``grace`` seconds the process ends regardless."""
        if self._armed.is_set():
            return
        self._armed.set()
        self._exit_code = code
        with contextlib.suppress(Exception):  # the log sink may be the dead terminal
            log.warning("exiting (%s); forcing it in %.1f s if still running", reason, self.grace)
        threading.Thread(target=self._deadline, name="exit-guard-deadline", daemon=True).start()

    def _deadline(self) -> None:
        if self._closed.wait(self.grace):
            return
        with contextlib.suppress(Exception):
            log.warning(
                "shutdown did not finish in %.1f s: leaving the database and exiting", self.grace
            )
        try:
            embedded.release_all(timeout=1, wait=False)
        finally:
            os._exit(self._exit_code)

    def _watch_terminal(self) -> None:
        poller = select.poll()
        for fd in self._ttys:
            poller.register(fd, 0)  # no events asked: hang-up and errors are always reported
        gone = select.POLLHUP | select.POLLERR | select.POLLNVAL
        while not self._closed.is_set():
            if any(mask & gone for _fd, mask in poller.poll(0)):
                self.request_exit(128 + signal.SIGHUP, "the terminal was closed")
                os.kill(os.getpid(), signal.SIGTERM)
                return
            self._closed.wait(self.poll_interval)

    def close(self) -> None:
        """Stop watching; the process is exiting on its own."""
        self._closed.set()


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False
