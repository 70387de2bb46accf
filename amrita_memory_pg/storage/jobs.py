"""The admin page's background jobs of the whole fleet (``sql/queries/jobs.sql``,
functions in ``sql/functions/job_v1.sql``): start, heartbeat, finish, cancel, list."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.rows import one_row


@dataclass(frozen=True, slots=True)
class JobClaim:
    """The answer to a start: whether it started, else the live job of the kind."""

    started: bool
    id: str
    owner: str
    started_by: str
    started_at: datetime


class JobRepository:
    """``now`` None means the database's clock (one for the fleet)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def start(
        self,
        job_id: str,
        kind: str,
        started_by: str,
        owner: str,
        stale_seconds: float,
        now: datetime | None = None,
    ) -> JobClaim:
        args = (job_id, kind, started_by, owner, stale_seconds, now)
        return await one_row(self.pool, JobClaim, query("job_start"), *args)

    async def beat(
        self,
        job_id: str,
        owner: str,
        phase: str,
        done: int,
        total: int,
        now: datetime | None = None,
    ) -> bool | None:
        """The heartbeat; True when a cancel was requested, None when the row is not
        this owner's running job any more."""
        value = await self.pool.fetchval(query("job_beat"), job_id, owner, phase, done, total, now)
        return None if value is None else bool(value)

    async def finish(
        self,
        job_id: str,
        owner: str,
        *,
        state: str,
        phase: str,
        done: int,
        total: int,
        result: str | None,
        error: str | None,
        now: datetime | None = None,
    ) -> bool:
        return bool(
            await self.pool.fetchval(
                query("job_finish"), job_id, owner, state, phase, done, total, result, error, now
            )
        )

    async def cancel(self, job_id: str, by: str) -> str | None:
        """Ask the owner to stop the job; the job's state (None: no such job)."""
        value = await self.pool.fetchval(query("job_cancel"), job_id, by)
        return None if value is None else str(value)

    async def list(
        self, limit: int, stale_seconds: float, now: datetime | None = None
    ) -> list[dict[str, Any]]:
        rows = await self.pool.fetch(query("job_list"), limit, stale_seconds, now)
        return [dict(r.items()) for r in rows]

    async def get(
        self, job_id: str, stale_seconds: float, now: datetime | None = None
    ) -> dict[str, Any] | None:
        row = await self.pool.fetchrow(query("job_get"), job_id, stale_seconds, now)
        return None if row is None else dict(row.items())
