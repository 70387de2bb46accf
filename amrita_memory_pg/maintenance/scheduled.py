"""Scheduled backups (``[backup] schedule``): each slot is taken by ONE process of the fleet.

Every process ticks (the NoneBot job, or ``amrita-memory backup scheduled`` from cron);
a tick computes the newest slot due (domain/backup_schedule.py) and tries to claim it in
one short transaction (claim_backup_slot_v1: a transaction-level advisory try-lock, then
moving ``backup_schedule.last_slot`` forward — no session lock, so PgBouncer's
transaction mode works). The claimer takes the backup (reason ``scheduled``, rotated
with ``[backup] keep_scheduled``), verifies it in a throwaway database when ``[backup]
verify``, and records how it ended in the same row. A process that dies mid-backup
leaves the slot claimed and unfinished (``finished_at`` NULL): the next slot runs.

A tick claims only while holding the fleet's ``backup`` lease: while a restore (which
holds it) or another backup runs, the slot stays unclaimed and a later tick takes it.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime

from amrita_memory_pg.domain.backup_schedule import latest_slot, parse_schedule
from amrita_memory_pg.domain.errors import AmritaMemoryError, BackupError, LeaseHeld
from amrita_memory_pg.maintenance.backup import BackupInfo, create_backup
from amrita_memory_pg.maintenance.verify import VerifyReport, verify_backup
from amrita_memory_pg.services.leases import Leases
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage.leases import LeaseRepository
from amrita_memory_pg.storage.queries import query

log = logging.getLogger(__name__)

REASON = "scheduled"


@dataclass(slots=True)
class ScheduledOutcome:
    """What one tick did: ``claimed`` False = not due, or another process has the slot."""

    slot: datetime | None
    claimed: bool
    backup: BackupInfo | None = None
    verify: VerifyReport | None = None
    error: str | None = None
    #: the process holding the fleet's backup lease (a restore, a backup): not claimed
    held_by: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and (self.verify is None or self.verify.ok)


def _claimer() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


async def run_scheduled_backup(
    store: Store, *, now: datetime | None = None, force: bool = False
) -> ScheduledOutcome:
    """One tick: claim the due slot and, when this process got it, back up and verify.

    ``force`` takes a scheduled backup now (slot = now) even without a schedule, still
    through the claim, so two forced runs at once make one backup."""
    settings = store.settings.backup
    now = now or datetime.now(UTC)
    schedule = parse_schedule(settings.schedule)
    if force:
        slot = now.replace(microsecond=0)
    elif schedule is None:
        return ScheduledOutcome(None, False)
    else:
        slot = latest_slot(schedule, now, settings.timezone)
    leases = Leases(LeaseRepository(store.pool), ttl_seconds=store.settings.database.lease_seconds)
    try:
        async with leases.hold("backup"):
            return await _take_slot(store, slot)
    except LeaseHeld as held:
        log.info("scheduled backup for slot %s waits: %s", slot.isoformat(), held)
        return ScheduledOutcome(slot, False, held_by=held.owner)


async def _take_slot(store: Store, slot: datetime) -> ScheduledOutcome:
    """Claim ``slot`` and, when this process got it, back up, verify and record."""
    settings = store.settings.backup
    async with store.pool.acquire() as conn, conn.transaction():
        claimed = bool(await conn.fetchval(query("claim_backup_slot"), slot, _claimer()))
    outcome = ScheduledOutcome(slot, claimed)
    if not claimed:
        return outcome
    try:
        outcome.backup = await create_backup(store, reason=REASON)
        if settings.verify:
            outcome.verify = await verify_backup(store, outcome.backup.stem)
            if not outcome.verify.ok:
                outcome.error = "verify: " + "; ".join(outcome.verify.problems)
    except (AmritaMemoryError, OSError) as exc:
        outcome.error = str(exc) if isinstance(exc, BackupError) else f"{type(exc).__name__}: {exc}"
    await store.pool.execute(
        query("finish_backup_slot"),
        slot,
        outcome.backup.stem if outcome.backup else None,
        outcome.ok,
        (outcome.error or "")[:2000] or None,
    )
    if outcome.ok:
        log.info("scheduled backup %s taken", outcome.backup.stem if outcome.backup else "?")
    else:
        log.error("scheduled backup for slot %s failed: %s", slot.isoformat(), outcome.error)
    return outcome
