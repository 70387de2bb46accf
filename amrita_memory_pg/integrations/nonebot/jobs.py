"""Jobs on nonebot-plugin-apscheduler: the decay sweep (reference §5.3) and one L3
cycle job per target (§8.2–8.3; when to run is decided by services/scheduling.py)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from amrita_memory_pg.domain.consolidation import CycleSummary
from amrita_memory_pg.domain.records import SweepReport
from amrita_memory_pg.domain.scheduling import Decision
from amrita_memory_pg.services.scheduling import ScheduledRun, SchedulingService
from amrita_memory_pg.settings import Settings

log = logging.getLogger(__name__)

SWEEP_JOB_ID = "amrita_memory_decay_sweep"
SESSION_JOB_ID = "amrita_memory_session_expiry"
MISFIRE_GRACE_SECONDS = 300


def register_sweep_job(
    scheduler: Any, settings: Settings, job: Callable[[], Awaitable[Any]]
) -> bool:
    """(Re)register the interval sweep; first run one interval after start.

    Not registered when ``decay.enabled`` or ``decay.sweep_enabled`` is false (any old
    job with the id is removed either way). Returns whether it was registered.
    """
    if scheduler.get_job(SWEEP_JOB_ID) is not None:
        scheduler.remove_job(SWEEP_JOB_ID)
    if not (settings.decay.enabled and settings.decay.sweep_enabled):
        log.info("sweep disabled via config")
        return False
    scheduler.add_job(
        job,
        "interval",
        hours=settings.decay.sweep_interval_hours,
        id=SWEEP_JOB_ID,
        misfire_grace_time=MISFIRE_GRACE_SECONDS,
        replace_existing=True,
    )
    log.info("decay sweep every %d h", settings.decay.sweep_interval_hours)
    return True


async def run_sweep(sweep: Callable[[], Awaitable[SweepReport | None]]) -> SweepReport | None:
    """One sweep; a scheduled job's outer edge: failures are logged, never raised. The
    sweep returns None when another process of the fleet holds its lease (logged there)."""
    try:
        report = await sweep()
    except Exception:
        log.exception("decay sweep failed")
        return None
    if report is None:
        return None
    log.info(
        "decay sweep: scanned=%d demoted=%d purged=%d kept=%d",
        report.scanned,
        report.demoted,
        report.purged,
        report.kept,
    )
    return report


# --- L3 cycles: one date job per target (reference §8.2–8.3) ----------------------------

L3_JOB_PREFIX = "amrita_memory_l3_"
#: a run the event loop could not start on time still starts within this many seconds;
#: later than that, the next start-up's restore (or the next message) plans it again
L3_MISFIRE_GRACE_SECONDS = 600
#: when a due job cannot even reach the database, try again this much later
L3_RETRY_AFTER_ERROR = timedelta(minutes=30)


def l3_job_id(target_key: str) -> str:
    """``amrita_memory_l3_{target}`` (the reference's was ``subconscious_{user id}``)."""
    return L3_JOB_PREFIX + target_key


class L3Jobs:
    """The job wiring of :class:`SchedulingService`: every :class:`ScheduledRun` becomes
    (or replaces) its target's one-shot date job; a due job runs the cycle and schedules
    the run the service planned after it, success or failure."""

    def __init__(self, scheduler: Any, scheduling: SchedulingService) -> None:
        self.scheduler = scheduler
        self.scheduling = scheduling

    def schedule(self, runs: Iterable[ScheduledRun]) -> None:
        for run in runs:
            self.scheduler.add_job(
                self.run_due,
                "date",
                run_date=run.run_at,
                args=[run.target_key],
                id=l3_job_id(run.target_key),
                replace_existing=True,
                misfire_grace_time=L3_MISFIRE_GRACE_SECONDS,
            )

    def next_run(self, target_key: str) -> datetime | None:
        job = self.scheduler.get_job(l3_job_id(target_key))
        return None if job is None else job.next_run_time

    async def run_due(self, target_key: str) -> CycleSummary | None:
        """A due job: one cycle, then the next job. The job's outer edge: errors log."""
        try:
            summary, after = await self.scheduling.run_cycle(target_key)
        except Exception:
            log.exception("L3 cycle for %s could not run; retrying later", target_key)
            retry = self.scheduling.clock() + L3_RETRY_AFTER_ERROR
            self.schedule([ScheduledRun(target_key, Decision(retry, None, "retry_after_error"))])
            return None
        if after is not None:
            self.schedule([after])
        return summary

    async def restore(self) -> list[ScheduledRun]:
        """At start-up: schedule what the stored state says (W17)."""
        runs = await self.scheduling.restore()
        self.schedule(runs)
        return runs

    def remove_all(self) -> None:
        for job in list(self.scheduler.get_jobs()):
            if str(job.id).startswith(L3_JOB_PREFIX):
                self.scheduler.remove_job(job.id)


def register_session_job(
    scheduler: Any, settings: Settings, job: Callable[[], Awaitable[Any]]
) -> bool:
    """(Re)register the session-expiry job every ``check_interval_minutes``:
    it unloads the scopes of expired chats and, when ``[extraction] enabled``, extracts
    their memories. Always registered (loaded scopes expire with their session)."""
    if scheduler.get_job(SESSION_JOB_ID) is not None:
        scheduler.remove_job(SESSION_JOB_ID)
    minutes = settings.extraction.check_interval_minutes
    scheduler.add_job(
        job,
        "interval",
        minutes=minutes,
        id=SESSION_JOB_ID,
        misfire_grace_time=MISFIRE_GRACE_SECONDS,
        replace_existing=True,
        max_instances=1,
    )
    log.info(
        "session expiry every %d min (extraction %s)",
        minutes,
        "on" if settings.extraction.enabled else "off",
    )
    return True


async def run_session_job(job: Callable[[], Awaitable[Any]]) -> None:
    """One session-expiry pass; a scheduled job's outer edge: failures are logged."""
    try:
        await job()
    except Exception:
        log.exception("session expiry / extraction job failed")


# --- scheduled backups: every process ticks, one of the fleet takes a slot ------------------

BACKUP_JOB_ID = "amrita_memory_scheduled_backup"


def register_backup_job(
    scheduler: Any, settings: Settings, job: Callable[[], Awaitable[Any]]
) -> bool:
    """(Re)register the scheduled-backup tick every ``[backup] check_minutes`` when
    ``[backup] schedule`` is set. Each tick tries to claim the due slot in PostgreSQL, so
    a fleet of bots takes each backup once. Returns whether it was registered."""
    if scheduler.get_job(BACKUP_JOB_ID) is not None:
        scheduler.remove_job(BACKUP_JOB_ID)
    if not settings.backup.schedule:
        return False
    scheduler.add_job(
        job,
        "interval",
        minutes=settings.backup.check_minutes,
        id=BACKUP_JOB_ID,
        misfire_grace_time=MISFIRE_GRACE_SECONDS,
        max_instances=1,
        replace_existing=True,
    )
    log.info(
        "scheduled backups %s (checked every %d min)",
        settings.backup.schedule,
        settings.backup.check_minutes,
    )
    return True


async def run_backup_tick(tick: Callable[[], Awaitable[Any]]) -> Any:
    """One tick; a scheduled job's outer edge: failures are logged, never raised."""
    try:
        return await tick()
    except Exception:
        log.exception("scheduled backup tick failed")
        return None
