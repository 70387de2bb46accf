"""Pooled connections that skip asyncpg's reset round trip when nothing needs resetting.

asyncpg resets every connection the pool takes back (``pg_advisory_unlock_all(); CLOSE
ALL; UNLISTEN *; RESET ALL``): one more round trip after every ``pool.fetch``, which was
a third of a chat turn's memory block (bench/bench_injection.py). Our code keeps its
session state inside transactions — ``SET LOCAL``, transaction-level advisory locks,
cursors only in transactions, no ``LISTEN``, no temporary tables — and the pool still
rolls back a transaction left open. The one session-level change,
``lift_statement_timeout(local=False)``, marks the connection; only a marked connection
is reset on release.

Behind a transaction-mode pooler (``[database] pooler = "transaction"``) the
server connection changes between transactions, so nothing may live in the session: the
timeouts cannot be startup parameters and are set with ``SET LOCAL`` in the same
round trip as every ``BEGIN`` (:meth:`PooledConnection.set_begin_settings`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Generator
from typing import Any

import asyncpg


class PooledConnection(asyncpg.Connection):
    """An asyncpg connection whose reset query is empty unless session state changed."""

    __slots__ = ("_begin_settings", "_session_changed")

    def set_begin_settings(self, statements: str) -> None:
        """Statements sent with every top-level ``BEGIN`` in the same simple query (one
        round trip), e.g. ``SET LOCAL statement_timeout = 10000;``."""
        self._begin_settings = statements

    @property
    def behind_pooler(self) -> bool:
        """True when the connection goes through a transaction-mode pooler."""
        return bool(getattr(self, "_begin_settings", ""))

    async def execute(self, query: str, *args: Any, timeout: float | None = None) -> str:  # noqa: ASYNC109 (asyncpg's signature)
        extra = getattr(self, "_begin_settings", "")
        if extra and not args and query.startswith("BEGIN"):
            # asyncpg's Transaction.start sends exactly 'BEGIN[ ISOLATION …];'
            query = f"{query} {extra}"
        return str(await super().execute(query, *args, timeout=timeout))

    def mark_session_changed(self) -> None:
        """Session-level state was set (``set_config(..., false)``): reset on release."""
        self._session_changed = True

    def get_reset_query(self) -> str:
        if getattr(self, "_session_changed", False):
            self._session_changed = False
            return str(super().get_reset_query())
        return ""


def behind_pooler(conn: Any) -> bool:
    """Whether ``conn`` (a pooled connection or its proxy) goes through a
    transaction-mode pooler, where session-level settings would leak."""
    return bool(getattr(conn, "behind_pooler", False))


def mark_session_changed(conn: Any) -> None:
    """Mark ``conn`` (a pooled connection or its proxy) for the full reset on release;
    a connection outside our pool has no reset to ask for."""
    mark = getattr(conn, "mark_session_changed", None)
    if mark is not None:
        mark()


#: the (pool, connection) every statement of this task on that pool uses (see ``pinned``)
_PINNED: contextvars.ContextVar[tuple[asyncpg.Pool, Any] | None] = contextvars.ContextVar(
    "amrita_memory_pinned_connection", default=None
)


class _PinnedAcquire:
    """What ``acquire()`` returns while a connection is pinned: the same connection,
    awaited or used as ``async with``, never released by the inner code."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def __await__(self) -> Generator[Any, None, Any]:
        return self._get().__await__()

    async def _get(self) -> Any:
        return self.conn

    async def __aenter__(self) -> Any:
        return self.conn

    async def __aexit__(self, *exc: object) -> None:
        return None


class PinnablePool(asyncpg.Pool):
    """An asyncpg pool whose connection can be pinned for one task (see :func:`pinned`).

    ``pool.fetch`` and friends go through ``acquire``, and so does every repository's
    write, so pinning reaches all of them without any repository knowing about it.

    :attr:`waiting` counts the tasks inside ``acquire`` that have no connection yet,
    for ``/metrics`` (``amrita_memory_pool_waiting``): a plain integer, so the hot path
    pays two additions and no metrics call.
    """

    waiting = 0

    async def _acquire(self, timeout: float | None) -> Any:  # noqa: ASYNC109 (asyncpg's signature)
        # asyncpg's one path to a connection (``acquire()`` and ``async with``, also under
        # ``pool.fetch``); tests/integration/test_metrics.py fails when it is renamed
        self.waiting += 1
        try:
            return await super()._acquire(timeout)  # type: ignore[misc]
        finally:
            self.waiting -= 1

    def acquire(self, *, timeout: float | None = None) -> Any:
        current = _PINNED.get()
        if current is not None and current[0] is self:
            return _PinnedAcquire(current[1])
        return super().acquire(timeout=timeout)

    async def release(self, connection: Any, *, timeout: float | None = None) -> None:  # noqa: ASYNC109 (asyncpg signature)
        current = _PINNED.get()
        if current is not None and current[0] is self and connection is current[1]:
            return
        await super().release(connection, timeout=timeout)


@contextlib.asynccontextmanager
async def pinned(pool: asyncpg.Pool) -> AsyncIterator[Any]:
    """Every statement this task sends through ``pool`` inside the block runs in ONE
    transaction: committed when the block ends, rolled back when it raises.

    Why: a page's write and its audit row must commit together or not at all
    (no unaudited change) although they go through different repositories. A repository's own
    ``conn.transaction()`` becomes a savepoint inside it. Only for one task doing one
    thing at a time (a request handler): statements must not run concurrently on the
    pinned connection. A pool that is not a :class:`PinnablePool` cannot pin: refused.
    """
    if not isinstance(pool, PinnablePool):
        raise TypeError("pinned() needs the PinnablePool made by storage.pg.database.create_pool")
    if (current := _PINNED.get()) is not None and current[0] is pool:
        yield current[1]  # already inside: one transaction
        return
    async with pool.acquire() as conn, conn.transaction():
        token = _PINNED.set((pool, conn))
        try:
            yield conn
        finally:
            _PINNED.reset(token)
