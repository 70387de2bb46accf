"""What the admin web page reads and writes beyond the services: its lists and its audit log.

The page searches, adds, edits and deletes memories through :class:`MemoryService` (the
same code and SQL as the tools); only its browse lists (every filter at once, sorted,
paged) and the ``admin_audit`` table are its own, as the named queries of
``sql/queries/web.sql``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import asyncpg

from amrita_memory_pg.domain.records import MemoryRecord
from amrita_memory_pg.storage.memories import record_from_row
from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.rows import from_row

#: the sort orders of the memory list (``admin_memory_page``'s $11)
MEMORY_SORTS = (
    "created_desc",
    "created_asc",
    "updated_desc",
    "updated_asc",
    "importance_desc",
    "importance_asc",
)


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """The memory list's filters; None = any."""

    scope: str | None = None
    category: str | None = None
    source: str | None = None
    importance_min: int | None = None
    importance_max: int | None = None
    tags: tuple[str, ...] | None = None
    created_since: datetime | None = None
    sort: str = "created_desc"


@dataclass(frozen=True, slots=True)
class PartitionUsage:
    partition_key: str
    memories: int
    high: int
    medium: int
    low: int
    scope_user: int
    scope_group: int
    scope_global: int
    oldest: datetime | None
    newest: datetime | None
    content_bytes: int
    memo_chars: int


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A stored session that still counts."""

    role: str
    name: str
    password_fp: str


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: int
    at: datetime
    actor: str
    role: str
    client: str | None
    action: str
    partition_key: str | None
    target_id: str | None
    detail: Mapping[str, Any]
    ok: bool


class AdminRepository:
    """The admin page's own queries on an asyncpg pool."""

    def __init__(self, pool: asyncpg.Pool, read_pool: asyncpg.Pool | None = None) -> None:
        self.pool = pool
        #: the list pages' reads (audit, partitions, memories) may lag: a replica's pool
        #: when ``[database] read_url`` is set
        self.read_pool = read_pool if read_pool is not None else pool

    # ------------------------------------------------------------ sessions, login limit

    async def session_create(
        self,
        sid: str,
        *,
        role: str,
        name: str,
        password_fp: str,
        client: str | None,
        now: datetime,
        expires: datetime,
    ) -> None:
        await self.pool.execute(
            query("web_session_insert"), sid, role, name, password_fp, client, now, expires
        )

    async def session_get(self, sid: str, now: datetime) -> SessionRow | None:
        """The session if it still counts (not revoked, not expired), else None."""
        row = await self.pool.fetchrow(query("web_session_get"), sid, now)
        return None if row is None else from_row(SessionRow, row)

    async def session_revoke(self, sid: str, now: datetime) -> None:
        await self.pool.execute(query("web_session_revoke"), sid, now)

    async def session_revoke_all(self, now: datetime) -> int:
        """Log out everywhere: the number of sessions ended."""
        return int(await self.pool.fetchval(query("web_session_revoke_all"), now))

    async def login_failed(self, client: str, now: datetime, window: timedelta) -> None:
        await self.pool.execute(query("web_login_failed"), client, now, now - window)

    async def login_failures(
        self, client: str, now: datetime, window: timedelta
    ) -> tuple[int, datetime | None]:
        """(failed logins of ``client`` within ``window``, the oldest of them)."""
        row = await self.pool.fetchrow(query("web_login_failures"), client, now - window)
        assert row is not None
        return int(row["failures"]), row["oldest"]

    async def audit(
        self,
        *,
        actor: str,
        role: str,
        client: str | None,
        action: str,
        partition_key: str | None,
        target_id: str | None,
        detail: Mapping[str, Any],
        ok: bool,
        at: datetime,
    ) -> int:
        """Append one audit row; its id."""
        value = await self.pool.fetchval(
            query("admin_audit_insert"),
            actor,
            role,
            client,
            action,
            partition_key,
            target_id,
            json.dumps(dict(detail), ensure_ascii=False, default=str),
            ok,
            at,
        )
        return int(value)

    async def audit_page(
        self,
        *,
        limit: int,
        offset: int = 0,
        partition_key: str | None = None,
        action_prefix: str | None = None,
    ) -> tuple[list[AuditEntry], int]:
        rows = await self.read_pool.fetch(
            query("admin_audit_page"), limit, offset, partition_key, action_prefix
        )
        entries = [
            AuditEntry(
                id=r["id"],
                at=r["at"],
                actor=r["actor"],
                role=r["role"],
                client=r["client"],
                action=r["action"],
                partition_key=r["partition_key"],
                target_id=r["target_id"],
                detail=json.loads(r["detail"]),
                ok=r["ok"],
            )
            for r in rows
        ]
        return entries, int(rows[0]["total"]) if rows else 0

    async def partition_page(
        self, *, limit: int, offset: int = 0, contains: str | None = None
    ) -> tuple[list[PartitionUsage], int]:
        """Partitions by size, with the ``partition_usage`` view's counts."""
        rows = await self.read_pool.fetch(query("admin_partition_page"), limit, offset, contains)
        usage = [from_row(PartitionUsage, r) for r in rows]
        return usage, int(rows[0]["total"]) if rows else 0

    async def overview_counts(self) -> list[tuple[str, str, int]]:
        """Memories by scope, category and source across partitions: (dimension, value, n)."""
        rows = await self.read_pool.fetch(query("admin_overview_counts"))
        return [(str(r["dimension"]), str(r["value"]), int(r["n"])) for r in rows]

    async def overview_daily(self, since: datetime, tz: str) -> list[tuple[date, int, int, int]]:
        """Per day in ``tz`` since ``since``: (day, memories written, recalls, L3 tokens)."""
        rows = await self.read_pool.fetch(query("admin_overview_daily"), since, tz)
        return [(r["day"], int(r["written"]), int(r["recalls"]), int(r["tokens"])) for r in rows]

    async def memory_page(
        self, partition_key: str, where: MemoryQuery, *, limit: int, offset: int = 0
    ) -> tuple[list[MemoryRecord], int]:
        """One page of a partition's memories with every filter of the list."""
        if where.sort not in MEMORY_SORTS:
            raise ValueError(f"unknown sort {where.sort!r}")
        tags: Sequence[str] | None = list(where.tags) if where.tags else None
        rows = await self.read_pool.fetch(
            query("admin_memory_page"),
            partition_key,
            limit,
            offset,
            where.scope,
            where.category,
            where.source,
            where.importance_min,
            where.importance_max,
            tags,
            where.created_since,
            where.sort,
        )
        return [record_from_row(r) for r in rows], int(rows[0]["total"]) if rows else 0
