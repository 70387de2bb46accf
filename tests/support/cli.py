"""Run the ``amrita-memory`` command in its own process, as an operator would.

Each run is a separate process with its own environment, working directory, stdin,
stdout, stderr and exit status. By default the process is forked from a server that has
imported the CLI once (tests/support/cli_forkserver.py: the ~100 runs of the suite skip
~2 s of imports each); ``AMRITA_TEST_CLI_SUBPROCESS=1`` starts a fresh interpreter per
run instead (``python -m amrita_memory_pg.cli.main``), as does any test that needs the
real entry point itself.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "amrita_memory_pg.cli.main"]


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The current environment without any of our settings, plus ``extra``; the CLI in
    English unless ``extra`` names a language (``AMRITA_MEMORY_LANGUAGE=zh``, or ``""`` for
    none: the default a user gets, tested in tests/integration/test_cli_language.py)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("AMRITA_MEMORY_", "EMBEDDING_", "EMBED_", "REEMBED_", "VECTOR_DB_", "LLM_")
        )
        and k != "DATABASE_URL"
    }
    env["AMRITA_MEMORY_LANGUAGE"] = "en"
    env.update(extra or {})
    if env["AMRITA_MEMORY_LANGUAGE"] == "":  # "": as a user without the setting has it
        del env["AMRITA_MEMORY_LANGUAGE"]
    return env


class _ForkServer:
    """The client side of cli_forkserver.py: one request at a time."""

    def __init__(self) -> None:
        req_r, self._req_w = os.pipe()
        self._rep_r, rep_w = os.pipe()
        # The server expects its ends on fds 3 and 4.
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import os, sys, runpy; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4);"
                " runpy.run_path(sys.argv[3], run_name='__main__')",
                str(req_r),
                str(rep_w),
                str(Path(__file__).with_name("cli_forkserver.py")),
            ],
            pass_fds=(req_r, rep_w),
            env=clean_env(),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )
        os.close(req_r)
        os.close(rep_w)
        self._buffer = b""
        self.lock = threading.Lock()

    def _reply(self, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._rep_r], [], [], left)[0]:
                return None
            chunk = os.read(self._rep_r, 65536)
            if not chunk:
                raise RuntimeError("the CLI fork server exited")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(self, request: dict[str, Any], timeout: float) -> int | None:
        """The child's exit status, or None after killing it at ``timeout``."""
        os.write(self._req_w, (json.dumps(request) + "\n").encode())
        started = self._reply(30)
        if started is None:
            raise RuntimeError("the CLI fork server did not answer")
        done = self._reply(timeout)
        if done is not None:
            return int(done["status"])
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(started["pid"]), signal.SIGKILL)
        self._reply(30)
        return None

    def close(self) -> None:
        os.close(self._req_w)
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


_SERVER: _ForkServer | None = None


def _server() -> _ForkServer:
    global _SERVER
    if _SERVER is None:
        _SERVER = _ForkServer()
        atexit.register(_SERVER.close)
    return _SERVER


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    if os.environ.get("AMRITA_TEST_CLI_SUBPROCESS"):
        return subprocess.run(
            [*COMMAND, *args],
            env=clean_env(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )
    server = _server()
    with tempfile.TemporaryDirectory(prefix="amt-cli-") as tmp, server.lock:
        stdin = Path(tmp) / "stdin"
        stdin.write_text(input or "", encoding="utf-8")
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        out.touch()
        err.touch()
        status = server.run(
            {
                "args": list(args),
                "env": clean_env(env),
                "cwd": str(cwd or Path.cwd()),
                "stdin": str(stdin) if input is not None else os.devnull,
                "stdout": str(out),
                "stderr": str(err),
            },
            timeout,
        )
        stdout = out.read_text(encoding="utf-8", errors="replace")
        stderr = err.read_text(encoding="utf-8", errors="replace")
    if status is None:
        raise subprocess.TimeoutExpired([*COMMAND, *args], timeout, stdout, stderr)
    return subprocess.CompletedProcess([*COMMAND, *args], status, stdout, stderr)
