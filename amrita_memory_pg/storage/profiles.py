"""User profiles on an asyncpg pool: read, compare-and-set save, history.

The statements are the named queries of ``sql/queries/profiles.sql``; the one write is
``profile_save_v1`` (``sql/functions/profile.sql``): it stores new content only if
the profile is still at the version it was computed from, records the history row and
trims the history, in one statement. The edit itself is pure
(:mod:`amrita_memory_pg.domain.profile`); the service re-reads and re-applies it when a
concurrent save got there first, so no line is ever lost. Edits through
:meth:`ProfileRepository.locked` also hold a per-profile advisory lock from the read to the
save, so under contention they queue instead of retrying.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import asyncpg

from amrita_memory_pg.domain.profile import Profile, ProfileActor, ProfileChange, ProfileInfo
from amrita_memory_pg.storage.lineage import record_texts
from amrita_memory_pg.storage.pg.outcome import write_connection
from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.trail import act, raise_if_paused, refusable


class LockedProfile:
    """A profile read under its edit lock, saved on the same connection and transaction."""

    def __init__(self, conn: Any, partition_key: str, profile: Profile) -> None:
        self._conn = conn
        self.partition_key = partition_key
        self.profile = profile

    async def save(
        self, profile: Profile, *, operation: str, actor: ProfileActor, keep: int, now: datetime
    ) -> int | None:
        """Store ``profile`` over the one read; the new version (None: changed meanwhile
        by a writer that did not take the lock). Inside
        :func:`~amrita_memory_pg.domain.lineage.deriving` (the loop's edit) what its new
        lines and summary were made from is recorded in the same transaction."""
        version = await _save(
            self._conn,
            self.partition_key,
            self.profile.version,
            profile,
            operation=operation,
            actor=actor,
            keep=keep,
            now=now,
        )
        if version is not None:
            before = set(self.profile.lines)
            await record_texts(
                self._conn,
                "profile_line",
                self.partition_key,
                [line for line in profile.lines if line not in before],
                now,
            )
            if profile.summary != self.profile.summary:
                await record_texts(
                    self._conn, "profile_summary", self.partition_key, [profile.summary], now
                )
        return version


class ProfileRepository:
    """Repository of user profiles and their history."""

    def __init__(self, pool: asyncpg.Pool, *, acquire_timeout: float | None = None) -> None:
        self._pool = pool
        #: longest wait for a pooled connection before a write is refused (None = no limit)
        self.acquire_timeout = acquire_timeout

    async def get(self, partition_key: str) -> Profile:
        """The profile of a partition (empty, version 0, when there is none)."""
        return await _fetch(self._pool, partition_key)

    @contextlib.asynccontextmanager
    async def locked(self, partition_key: str) -> AsyncIterator[LockedProfile]:
        """The profile read under its edit lock, in a transaction that commits when the
        block ends (and rolls back, writing nothing, when it raises). An automatic writer
        is told to the database, which refuses it on a paused partition (pause.sql,
        :class:`MemoryPaused`)."""
        async with (
            write_connection(self._pool, acquire_timeout=self.acquire_timeout) as conn,
            conn.transaction(),
        ):
            if refusable():
                await act(conn)
            await conn.execute(query("lock_profile_key"), partition_key)
            try:
                yield LockedProfile(conn, partition_key, await _fetch(conn, partition_key))
            except asyncpg.PostgresError as exc:
                raise_if_paused(exc, partition_key)
                raise

    async def listing(self, limit: int, offset: int = 0) -> tuple[int, list[ProfileInfo]]:
        """(how many profiles there are, a page of them, the most recently changed first)."""
        rows = await self._pool.fetch(query("profile_list"), limit, offset)
        total = int(rows[0]["total"]) if rows else 0
        return total, [
            ProfileInfo(
                partition_key=r["partition_key"],
                version=r["version"],
                summary=r["summary"],
                line_count=r["line_count"],
                updated_at=r["updated_at"],
            )
            for r in rows
        ]

    async def history(self, partition_key: str, limit: int) -> list[ProfileChange]:
        """The newest ``limit`` changes, newest first (line counts, not lines)."""
        rows = await self._pool.fetch(query("list_profile_history"), partition_key, limit)
        return [_change(row) for row in rows]

    async def change(self, partition_key: str, version: int) -> ProfileChange | None:
        """One change with its full content before and after, or None if not kept."""
        row = await self._pool.fetchrow(query("get_profile_history_entry"), partition_key, version)
        if row is None:
            return None
        old, new = tuple(row["old_lines"]), tuple(row["new_lines"])
        return _change(row, old_count=len(old), new_count=len(new), old=old, new=new)


async def _fetch(executor: Any, partition_key: str) -> Profile:
    """The profile through a pool or a connection (empty, version 0, when there is none)."""
    row = await executor.fetchrow(query("get_profile"), partition_key)
    if row is None:
        return Profile()
    return Profile(row["summary"], tuple(row["lines"]), row["version"])


async def _save(
    conn: Any,
    partition_key: str,
    expected_version: int,
    profile: Profile,
    *,
    operation: str,
    actor: ProfileActor,
    keep: int,
    now: datetime,
) -> int | None:
    row = await conn.fetchrow(
        query("save_profile"),
        partition_key,
        expected_version,
        profile.summary,
        list(profile.lines),
        operation,
        actor.kind,
        actor.who,
        actor.cycle_id,
        keep,
        now,
    )
    assert row is not None, "profile_save_v1 always returns one row"
    return int(row["new_version"]) if row["saved"] else None


def _change(row: Any, **override: Any) -> ProfileChange:
    old = override.pop("old", None)
    new = override.pop("new", None)
    counts = {
        "old_count": override.get("old_count", row.get("old_count", 0)),
        "new_count": override.get("new_count", row.get("new_count", 0)),
    }
    return ProfileChange(
        version=row["version"],
        operation=row["operation"],
        actor_kind=row["actor_kind"],
        actor=row["actor"],
        cycle_id=row["cycle_id"],
        changed_at=row["changed_at"],
        old_summary=row["old_summary"],
        new_summary=row["new_summary"],
        old_lines=old,
        new_lines=new,
        **counts,
    )
