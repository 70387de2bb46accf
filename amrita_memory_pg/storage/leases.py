"""Lease rows of long work across the fleet (``sql/queries/leases.sql``, functions in
``sql/functions/lease.sql``): one short statement per claim, heartbeat or release."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.rows import FunctionRepository


@dataclass(frozen=True, slots=True)
class Claim:
    """The answer to a claim: whether it was acquired, and who holds the lease now."""

    acquired: bool
    owner: str
    token: str
    expires_at: datetime
    #: whose expired lease this claim took over (None: the lease was free)
    previous_owner: str | None


class LeaseRepository(FunctionRepository):
    """The lease functions; ``now`` None means the database's clock (one for the fleet)."""

    async def acquire(
        self,
        kind: str,
        key: str,
        owner: str,
        token: str,
        ttl_seconds: float,
        now: datetime | None = None,
    ) -> Claim:
        args = (kind, key, owner, token, ttl_seconds, now)
        return await self._one(Claim, query("lease_acquire"), *args)

    async def take_over(
        self,
        kind: str,
        key: str,
        dead_token: str,
        owner: str,
        token: str,
        ttl_seconds: float,
        now: datetime | None = None,
    ) -> bool:
        """Replace a dead process's claim before its expiry (False: the row moved on)."""
        args = (kind, key, dead_token, owner, token, ttl_seconds, now)
        return await self._flag(query("lease_take_over"), *args)

    async def renew(
        self, kind: str, key: str, token: str, ttl_seconds: float, now: datetime | None = None
    ) -> bool:
        """The heartbeat; False when this claim no longer holds the lease."""
        return await self._flag(query("lease_renew"), kind, key, token, ttl_seconds, now)

    async def release(self, kind: str, key: str, token: str) -> bool:
        """Drop this claim's row; False when it no longer held the lease."""
        return await self._flag(query("lease_release"), kind, key, token)

    async def list(self, now: datetime | None = None) -> list[dict[str, Any]]:
        """Every lease row, with ``live`` (not expired at ``now``)."""
        return await self._dicts(query("lease_list"), now)
