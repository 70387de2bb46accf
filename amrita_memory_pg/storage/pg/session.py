"""Pooled connections that skip asyncpg's reset round trip when nothing needs resetting.

asyncpg resets every connection the pool takes back (``pg_advisory_unlock_all(); CLOSE
ALL; UNLISTEN *; RESET ALL``): one more round trip after every ``pool.fetch``, which was
a third of a chat turn's memory block (bench/bench_injection.py). Our code keeps its
session state inside transactions — ``SET LOCAL``, transaction-level advisory locks,
cursors only in transactions, no ``LISTEN``, no temporary tables — and the pool still
rolls back a transaction left open. The one session-level change,
``lift_statement_timeout(local=False)``, marks the connection; only a marked connection
is reset on release.
"""

from __future__ import annotations

from typing import Any

import asyncpg


class PooledConnection(asyncpg.Connection):
    """An asyncpg connection whose reset query is empty unless session state changed."""

    __slots__ = ("_session_changed",)

    def mark_session_changed(self) -> None:
        """Session-level state was set (``set_config(..., false)``): reset on release."""
        self._session_changed = True

    def get_reset_query(self) -> str:
        if getattr(self, "_session_changed", False):
            self._session_changed = False
            return str(super().get_reset_query())
        return ""


def mark_session_changed(conn: Any) -> None:
    """Mark ``conn`` (a pooled connection or its proxy) for the full reset on release;
    a connection outside our pool has no reset to ask for."""
    mark = getattr(conn, "mark_session_changed", None)
    if mark is not None:
        mark()
