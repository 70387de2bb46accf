"""Server-side timeouts of the pool's connections, and how maintenance lifts them.

A write reported as timed out must not commit later. The server aborts a
statement that runs or waits for a lock too long — which rolls it back — and says so
(SQLSTATE 57014 / 55P03), so a write reported as timed out was certainly not committed.
The client's ``command_timeout`` is longer (the settings refuse anything else), so in a
server that runs at all the server decides first; a client-side timeout then means the
server itself stalled, and is reported as an unknown outcome
(:mod:`amrita_memory_pg.storage.pg.outcome`).
"""

from __future__ import annotations

import logging

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from amrita_memory_pg.settings import DatabaseSettings
from amrita_memory_pg.storage.pg.session import behind_pooler, mark_session_changed
from amrita_memory_pg.storage.queries import query

log = logging.getLogger(__name__)


def server_timeouts(db: DatabaseSettings) -> dict[str, str]:
    """``statement_timeout`` and ``lock_timeout`` (milliseconds; 0 = none) for every pooled
    connection. Sent in the startup packet, they are the session's defaults: the pool's
    ``RESET ALL`` on release keeps them. Not behind a transaction-mode pooler (it refuses
    them): :func:`begin_settings` there."""
    return {
        "statement_timeout": str(round(db.statement_timeout * 1000)),
        "lock_timeout": str(round(db.lock_timeout * 1000)),
    }


def begin_settings(db: DatabaseSettings) -> str:
    """The same timeouts as ``SET LOCAL`` statements, sent with every ``BEGIN`` behind a
    transaction-mode pooler: they end with the transaction, so they never
    stay on a server connection another client gets next."""
    timeouts = server_timeouts(db)
    return query("begin_timeouts").format(
        statement_ms=int(timeouts["statement_timeout"]), lock_ms=int(timeouts["lock_timeout"])
    )


async def lift_statement_timeout(
    conn: asyncpg.Connection | PoolConnectionProxy, *, local: bool = True
) -> None:
    """No ``statement_timeout`` for one long maintenance statement (a re-embed switch, an
    index build, a restore). ``local``: for the current transaction only (``SET LOCAL``);
    otherwise for the session, which the pool's ``RESET ALL`` undoes on release.
    ``lock_timeout`` stays: a maintenance statement queued behind a lock would stall
    every chat write queued behind it."""
    if not local:
        if behind_pooler(conn):
            # the next statement may run on another server connection, and this one's
            # session setting would stay for whoever gets it: leave the defaults
            log.warning(
                "behind a transaction-mode pooler the statement timeout cannot be lifted "
                "for a session; a long maintenance statement may time out (run it with "
                "DATABASE_URL pointing at the server itself)"
            )
            return
        mark_session_changed(conn)  # the pool resets only connections marked so
    await conn.fetchval(query("lift_statement_timeout"), local)
