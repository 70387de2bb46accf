"""Who in the fleet does a piece of long work: leases in the database, the one place every
process sees.

Several bot processes share one database and each schedules the same L3 targets, sweeps
and session jobs; each such piece of work runs inside :meth:`Leases.hold`, which claims
a lease row (``sql/functions/lease.sql`` says why a row with an expiry, not a lock),
renews it with a heartbeat while the work runs, and drops it at the end. A claim that
finds a live lease of another claim raises :class:`LeaseHeld` naming the holder.

A claim is re-entrant within one call chain (a context variable): the scheduler holds a
target's lease around the cycle it starts, and the cycle runner asking again for the same
lease inside it gets it without a second claim. Two tasks of one process are two claims:
the second is refused like any other process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import psutil

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.errors import LeaseHeld
from amrita_memory_pg.storage.leases import Claim, LeaseRepository

log = logging.getLogger(__name__)

LeaseKind = Literal["l3", "extraction", "sweep", "reembed", "backup", "restore", "ann"]


def _started(pid: int) -> datetime | None:
    """When process ``pid`` of this host started (None: no such process)."""
    try:
        return datetime.fromtimestamp(psutil.Process(pid).create_time(), UTC)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


#: when this process started: part of its owner name (a reused pid is another process)
PROCESS_STARTED = _started(os.getpid()) or datetime.now(UTC)
STAMP = "%Y%m%dT%H%M%SZ"

#: (owner, kind, key) of the leases held by the current call chain
_held: ContextVar[frozenset[tuple[str, str, str]]] = ContextVar(
    "amrita_memory_leases_held", default=frozenset()
)


def process_owner() -> str:
    """``host:pid:start`` of this process, the name other processes are told."""
    return f"{socket.gethostname()}:{os.getpid()}:{PROCESS_STARTED:{STAMP}}"


def dead_here(owner: str) -> bool:
    """Whether ``owner`` names a process of THIS host that is gone (its pid not running,
    or running but started at another time: the pid was reused). Another host's process
    is never judged dead here: its lease expires. Host names must be unique in the fleet
    (a container's are, by default)."""
    host, _, rest = owner.partition(":")
    pid_text, _, stamp = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    started = _started(int(pid_text))
    return started is None or f"{started:{STAMP}}" != stamp


@dataclass
class Lease:
    """A held lease; ``lost`` turns true when a heartbeat found it taken over."""

    kind: str
    key: str
    owner: str
    token: str
    expires_at: datetime
    previous_owner: str | None = None
    lost: bool = False


class Leases:
    """Claims, heartbeats and releases of this process's leases.

    ``ttl_seconds``: how long a lease outlives its last heartbeat (the heartbeat runs
    every third of it), i.e. how soon another process takes over the work of one that
    died.
    """

    def __init__(
        self, repo: LeaseRepository, *, ttl_seconds: float = 60.0, owner: str | None = None
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        self.repo = repo
        self.ttl = ttl_seconds
        self.owner = owner or process_owner()

    @asynccontextmanager
    async def hold(self, kind: LeaseKind, key: str = "") -> AsyncIterator[Lease | None]:
        """Hold the lease of (``kind``, ``key``) for the block; :class:`LeaseHeld` when
        another claim holds it. Yields None when this call chain already holds it."""
        mine = (self.owner, kind, key)
        if mine in _held.get():
            yield None
            return
        token = secrets.token_hex(12)
        claim = await self.repo.acquire(kind, key, self.owner, token, self.ttl)
        outcome = "acquired"
        if not claim.acquired:
            # killed on this host (kill -9, OOM): no need to wait for its lease to expire
            if not (
                dead_here(claim.owner)
                and await self.repo.take_over(kind, key, claim.token, self.owner, token, self.ttl)
            ):
                metrics.lease_claimed(kind, "refused")
                raise LeaseHeld(kind, key, claim.owner, claim.expires_at)
            claim = Claim(True, self.owner, token, claim.expires_at, claim.owner)
            outcome = "dead"
            log.warning(
                "lease %s %r: taken over from %s, a process of this host that is no longer "
                "running (its lease had not expired yet)",
                kind,
                key,
                claim.previous_owner,
            )
        elif claim.previous_owner is not None:
            outcome = "expired"
            log.warning(
                "lease %s %r: taken over from %s, whose lease expired",
                kind,
                key,
                claim.previous_owner,
            )
        metrics.lease_claimed(kind, outcome)
        lease = Lease(kind, key, self.owner, token, claim.expires_at, claim.previous_owner)
        reset = _held.set(_held.get() | {mine})
        beat = asyncio.create_task(self._heartbeat(lease), name=f"lease {kind} {key}")
        metrics.lease_held(kind, 1)
        try:
            yield lease
        finally:
            metrics.lease_held(kind, -1)
            _held.reset(reset)
            beat.cancel()
            await asyncio.wait([beat])  # never raises the heartbeat's cancellation
            await self._release(lease)

    async def _heartbeat(self, lease: Lease) -> None:
        """Renew every third of the TTL until cancelled or the lease is lost."""
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                held = await self.repo.renew(lease.kind, lease.key, lease.token, self.ttl)
            except Exception as exc:  # a heartbeat's edge: the next one may get through
                log.warning("lease %s %r: heartbeat failed: %s", lease.kind, lease.key, exc)
                continue
            if not held:
                lease.lost = True
                metrics.lease_claimed(lease.kind, "lost")
                log.error(
                    "lease %s %r: lost (it expired and another process took it over); "
                    "the work may now run twice",
                    lease.kind,
                    lease.key,
                )
                return

    async def _release(self, lease: Lease) -> None:
        try:
            await self.repo.release(lease.kind, lease.key, lease.token)
        except Exception as exc:  # the row expires by itself after the TTL
            log.warning(
                "lease %s %r: not released (%s); it expires within %.0f s",
                lease.kind,
                lease.key,
                exc,
                self.ttl,
            )
