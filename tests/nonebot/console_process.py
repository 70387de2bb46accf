"""Drive the console bot as a user would: the README's command in a pseudo-terminal,
keystrokes in, the rendered screen (a pyte terminal emulator) out."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyte

REPO = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, str(REPO / "bot.py")]
# tall enough for the whole /memory usage in one screen (knowledge, profiles, L3, …)
COLUMNS, ROWS = 140, 90


class ConsoleBotProcess:
    def __init__(self, *, cwd: Path, env: dict[str, str]) -> None:
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        #: every byte the process wrote: its start-up log scrolls off the screen
        self.output = bytearray()
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        full_env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("AMRITA_MEMORY_", "LLM_", "EMBEDDING_", "DATABASE_URL"))
        }
        full_env.update({"TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)})
        full_env.update(env)
        self.proc = subprocess.Popen(
            COMMAND,
            cwd=cwd,
            env=full_env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master

    def pump(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.master], [], [], min(left, 0.1))
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    return
                if not data:
                    return
                self.output += data
                self.stream.feed(data)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(self, needle: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.3)
            if needle in self.text():
                return self.text()
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"{needle!r} never appeared; screen:\n{self.text()}")

    def focus_input(self) -> None:
        """ctrl+/ (0x1f) focuses the message input of the console UI."""
        os.write(self.master, b"\x1f")
        self.pump(0.5)

    def type_line(self, text: str) -> None:
        for char in text:
            os.write(self.master, char.encode())
            self.pump(0.01)
        os.write(self.master, b"\r")

    def close_terminal(self) -> None:
        """Close the terminal's master side, as tmux does when its session is killed."""
        if self.master >= 0:
            os.close(self.master)
            self.master = -1

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.close_terminal()
