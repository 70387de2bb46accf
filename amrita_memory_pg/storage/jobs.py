"""The admin page's background jobs of the whole fleet (``sql/queries/jobs.sql``,
functions in ``sql/functions/job.sql``): start, heartbeat, finish, cancel, list."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.rows import FunctionRepository


@dataclass(frozen=True, slots=True)
class JobClaim:
    """The answer to a start: whether it started, else the live job of the kind."""

    started: bool
    id: str
    owner: str
    started_by: str
    started_at: datetime


class JobRepository(FunctionRepository):
    """The job functions; a running job without a heartbeat for ``stale_seconds`` is
    lost (its process died) and no longer blocks a start. ``now`` None means the
    database's clock (one for the fleet)."""

    def __init__(self, pool: asyncpg.Pool, *, stale_seconds: float) -> None:
        super().__init__(pool)
        self.stale_seconds = stale_seconds

    async def start(
        self,
        job_id: str,
        kind: str,
        started_by: str,
        owner: str,
        now: datetime | None = None,
    ) -> JobClaim:
        args = (job_id, kind, started_by, owner, self.stale_seconds, now)
        return await self._one(JobClaim, query("job_start"), *args)

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
        value = await self._value(query("job_beat"), job_id, owner, phase, done, total, now)
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
        args = (job_id, owner, state, phase, done, total, result, error, now)
        return await self._flag(query("job_finish"), *args)

    async def cancel(self, job_id: str, by: str) -> str | None:
        """Ask the owner to stop the job; the job's state (None: no such job)."""
        value = await self._value(query("job_cancel"), job_id, by)
        return None if value is None else str(value)

    async def list(self, limit: int, now: datetime | None = None) -> list[dict[str, Any]]:
        return await self._dicts(query("job_list"), limit, self.stale_seconds, now)

    async def get(self, job_id: str, now: datetime | None = None) -> dict[str, Any] | None:
        rows = await self._dicts(query("job_get"), job_id, self.stale_seconds, now)
        return rows[0] if rows else None
