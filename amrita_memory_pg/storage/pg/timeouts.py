"""Server-side timeouts of the pool's connections, and how maintenance lifts them.

Issue 11, F7: a write reported as timed out must not commit later. The server aborts a
statement that runs or waits for a lock too long — which rolls it back — and says so
(SQLSTATE 57014 / 55P03), so a write reported as timed out was certainly not committed.
The client's ``command_timeout`` is longer (the settings refuse anything else), so in a
server that runs at all the server decides first; a client-side timeout then means the
server itself stalled, and is reported as an unknown outcome
(:mod:`amrita_memory_pg.storage.pg.outcome`).
"""

from __future__ import annotations

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from amrita_memory_pg.settings import DatabaseSettings
from amrita_memory_pg.storage.pg.session import mark_session_changed
from amrita_memory_pg.storage.queries import query


def server_timeouts(db: DatabaseSettings) -> dict[str, str]:
    """``statement_timeout`` and ``lock_timeout`` (milliseconds; 0 = none) for every pooled
    connection. Sent in the startup packet, they are the session's defaults: the pool's
    ``RESET ALL`` on release keeps them."""
    return {
        "statement_timeout": str(round(db.statement_timeout * 1000)),
        "lock_timeout": str(round(db.lock_timeout * 1000)),
    }


async def lift_statement_timeout(
    conn: asyncpg.Connection | PoolConnectionProxy, *, local: bool = True
) -> None:
    """No ``statement_timeout`` for one long maintenance statement (a re-embed switch, an
    index build, a restore). ``local``: for the current transaction only (``SET LOCAL``);
    otherwise for the session, which the pool's ``RESET ALL`` undoes on release.
    ``lock_timeout`` stays: a maintenance statement queued behind a lock would stall
    every chat write queued behind it."""
    if not local:
        mark_session_changed(conn)  # the pool resets only connections marked so
    await conn.fetchval(query("lift_statement_timeout"), local)
