"""The decay sweep on nonebot-plugin-apscheduler (reference §5.3)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from amrita_memory_pg.domain.records import SweepReport
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


async def run_sweep(sweep: Callable[[], Awaitable[SweepReport]]) -> SweepReport | None:
    """One sweep; a scheduled job's outer edge: failures are logged, never raised."""
    try:
        report = await sweep()
    except Exception:
        log.exception("decay sweep failed")
        return None
    log.info(
        "decay sweep: scanned=%d demoted=%d purged=%d kept=%d",
        report.scanned,
        report.demoted,
        report.purged,
        report.kept,
    )
    return report


def register_session_job(
    scheduler: Any, settings: Settings, job: Callable[[], Awaitable[Any]]
) -> bool:
    """(Re)register the session-expiry job (issue 14) every ``check_interval_minutes``:
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
