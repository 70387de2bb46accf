"""What a failed database call did: nothing at all, or something we cannot know.

A chat tool that reports «failed» while its write commits a moment later makes the LLM
retry into a duplicate. So every driver failure on a write path is
classified here, by exception class and SQLSTATE — never by message text — into one of
two domain errors:

* :class:`~amrita_memory_pg.domain.errors.DatabaseRefused`: certainly no effect. The
  statement never left this process (no connection could be had within the timeout,
  the connection was already known closed, an argument could not be encoded), or the
  server answered it with an error, which aborts the transaction: ``statement_timeout``
  (57014), ``lock_timeout`` (55P03), a serialization failure or deadlock (40001, 40P01),
  a read-only server (25006), out of resources (class 53), or any other error of the
  statement itself.
* :class:`~amrita_memory_pg.domain.errors.OutcomeUnknown`: the statement was sent and no
  answer came — the connection broke (class 08, 57P01/57P02 administrator or crash
  shutdown, any FATAL, a reset socket) or the client stopped waiting. The pool's
  connections carry a server-side ``statement_timeout`` *shorter* than the client's
  ``command_timeout`` (:func:`~amrita_memory_pg.storage.pg.database.create_pool`), so
  in a healthy server the server always decides first and reports 57014; a client-side
  timeout therefore means the server itself stalled, and then nobody can say whether
  the commit happened.

:func:`write_connection` wraps one write (acquire, statements, release) so the
repository raises only these two, plus its own domain errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import asyncpg
from asyncpg.exceptions._base import DataError as ArgumentDataError
from asyncpg.pool import PoolConnectionProxy

from amrita_memory_pg.domain.errors import DatabaseError, DatabaseRefused, OutcomeUnknown

log = logging.getLogger(__name__)

#: SQLSTATE → reason of a statement the server aborted (the transaction rolled back).
REFUSED_SQLSTATES: dict[str, str] = {
    "57014": "timeout",  # query_canceled: statement_timeout (or a cancel request)
    "55P03": "lock",  # lock_not_available: lock_timeout
    "40001": "conflict",  # serialization_failure
    "40P01": "conflict",  # deadlock_detected
    "25006": "read_only",  # read_only_sql_transaction: a standby, or read-only by default
    "57P03": "unavailable",  # cannot_connect_now: starting up or in recovery
}
#: SQLSTATE classes of a statement the server aborted, when the code itself is not listed.
REFUSED_CLASSES: dict[str, str] = {"53": "resources"}
#: SQLSTATEs that come with the end of the connection: what was in flight is unknown.
LOST_SQLSTATES = frozenset({"57P01", "57P02", "57P04", "57P05"})
#: SQLSTATE classes of the same kind (08: connection exception).
LOST_CLASSES = frozenset({"08"})
#: asyncpg's client-side refusal of an argument it cannot encode, raised before anything
#: is written to the socket. (``asyncpg.exceptions.DataError`` is another class: the
#: server's SQLSTATE class 22; this one is the interface error of the same name.)
_PRE_SEND = (ArgumentDataError,)

_REASON_TEXT = {
    "timeout": "the server cancelled the statement after statement_timeout",
    "lock": "the server gave up waiting for a lock after lock_timeout",
    "unavailable": "no database connection could be had",
    "conflict": "the transaction conflicted with a concurrent one and was rolled back",
    "resources": "the server is out of resources",
    "read_only": "the server is read-only",
    "refused": "the server refused the statement",
}


def _refused(exc: BaseException, reason: str, sqlstate: str | None) -> DatabaseRefused:
    detail = type(exc).__name__ + (f" {sqlstate}" if sqlstate else "")
    return DatabaseRefused(
        f"{_REASON_TEXT[reason]} ({detail}); nothing was changed", reason=reason, sqlstate=sqlstate
    )


def _unknown(exc: BaseException, sqlstate: str | None) -> OutcomeUnknown:
    detail = type(exc).__name__ + (f" {sqlstate}" if sqlstate else "")
    return OutcomeUnknown(
        f"the connection was lost or timed out after the statement was sent ({detail}); "
        "it may or may not have been committed"
    )


def classify(exc: BaseException, *, sent: bool) -> DatabaseError | None:
    """The domain error for a driver failure, or None when ``exc`` is not one.

    ``sent`` says whether a write may have reached the server: False while a connection
    is being acquired (and for a read, which changes nothing either way), True from a
    write's first statement on. Unsure → True: an unknown outcome is the honest answer,
    a wrong «nothing happened» is the bug.

    After sending, the driver failures a driver failure was raised from count too: a
    transaction block whose connection broke mid-statement tries to ROLLBACK on exit, and
    asyncpg's «connection is closed» from that attempt hides the real failure behind it.
    A domain error (a vector backend's, say) is never a driver failure, whatever it was
    raised from: its own layer decided what it means.
    """
    direct = _classify_one(exc, sent=sent)
    if direct is None or not sent or isinstance(direct, OutcomeUnknown):
        return direct  # not a driver failure (a domain error passes through), or final
    seen: set[int] = set()
    inner = exc.__cause__ or exc.__context__
    while inner is not None and id(inner) not in seen:
        seen.add(id(inner))
        if isinstance(_classify_one(inner, sent=True), OutcomeUnknown):
            return _unknown(inner, getattr(inner, "sqlstate", None) or None)
        inner = inner.__cause__ or inner.__context__
    return direct


def _classify_one(exc: BaseException, *, sent: bool) -> DatabaseError | None:
    if isinstance(exc, asyncpg.PostgresError):
        sqlstate = exc.sqlstate or None
        code = sqlstate or ""
        severity = getattr(exc, "severity", None) or ""
        lost = (
            code in LOST_SQLSTATES
            or code[:2] in LOST_CLASSES
            or severity in ("FATAL", "PANIC")
            or isinstance(exc, asyncpg.PostgresConnectionError)
        )
        if lost:
            return _unknown(exc, sqlstate) if sent else _refused(exc, "unavailable", sqlstate)
        reason = REFUSED_SQLSTATES.get(code) or REFUSED_CLASSES.get(code[:2]) or "refused"
        return _refused(exc, reason, sqlstate)
    if isinstance(exc, _PRE_SEND):
        return _refused(exc, "refused", None)
    if type(exc) is asyncpg.InterfaceError:
        # The plain class is asyncpg's own precondition check (connection closed, another
        # operation in progress): raised before anything is written to the socket.
        return _refused(exc, "unavailable", None)
    if isinstance(
        exc, TimeoutError | OSError | asyncpg.InterfaceError | asyncpg.InternalClientError
    ):
        return _unknown(exc, None) if sent else _refused(exc, "unavailable", None)
    return None


_background: set[asyncio.Task[None]] = set()


async def _release(pool: asyncpg.Pool, conn: PoolConnectionProxy) -> None:
    try:
        await pool.release(conn)
    except Exception as exc:  # the pool already terminated the connection; a new one follows
        log.debug("releasing a failed connection: %s", type(exc).__name__)


@contextlib.asynccontextmanager
async def write_connection(
    pool: asyncpg.Pool, *, acquire_timeout: float | None
) -> AsyncIterator[PoolConnectionProxy]:
    """A pooled connection for one write; driver failures come out classified.

    Failures while acquiring (no free connection or no server within
    ``acquire_timeout``) are :class:`DatabaseRefused` ``unavailable``; failures after
    that are classified with ``sent=True``. Domain errors raised by the caller's block
    pass through unchanged. After a failure the connection is released in the
    background: a stalled server must not hold the reply back once it is known.
    """
    try:
        conn = await pool.acquire(timeout=acquire_timeout)
    except Exception as exc:
        mapped = classify(exc, sent=False)
        if mapped is None:
            raise
        raise mapped from exc
    try:
        yield conn
    except Exception as exc:
        task = asyncio.get_running_loop().create_task(_release(pool, conn))
        _background.add(task)
        task.add_done_callback(_background.discard)
        mapped = classify(exc, sent=True)
        if mapped is None:
            raise
        raise mapped from exc
    except BaseException:
        await _release(pool, conn)
        raise
    await _release(pool, conn)
