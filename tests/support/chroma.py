"""A real Chroma server (``chroma run``, shipped with chromadb) for remote-mode tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chroma_executable() -> str:
    beside = Path(sys.executable).with_name("chroma")
    found = str(beside) if beside.exists() else shutil.which("chroma")
    assert found, "the `chroma` command of chromadb is not installed (pip install '.[chroma]')"
    return found


@dataclass
class ChromaServer:
    path: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> ChromaServer:
        """Start it and wait for its heartbeat (≈2 s offline)."""
        log = (self.path.parent / f"chroma-{self.port}.log").open("ab")
        self.process = subprocess.Popen(
            [
                chroma_executable(),
                "run",
                "--path",
                str(self.path),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={"PATH": "/usr/bin:/bin", "ANONYMIZED_TELEMETRY": "False"},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"chroma run exited with {self.process.returncode}; see {log.name}"
                )
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=1.0)
                return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"chroma run did not answer within {timeout} s; see {log.name}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
