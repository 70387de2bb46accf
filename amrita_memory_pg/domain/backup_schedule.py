"""When scheduled backups run (``[backup] schedule``): pure functions, no I/O.

Two forms, kept simple on purpose:

* ``daily@HH:MM`` — once a day at that wall-clock time in ``[backup] timezone``;
* ``every Nh`` — every N hours (1–168), slots aligned on multiples of N hours since
  1970-01-01 00:00 UTC (``every 6h`` = 00:00, 06:00, 12:00, 18:00 UTC).

A *slot* is the start time of one scheduled backup. The fleet runs the newest slot
not later than now that no process has claimed yet (a slot missed while every process
was down runs at the next tick, once).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_DAILY = re.compile(r"^daily@(?P<h>[01]\d|2[0-3]):(?P<m>[0-5]\d)$")
_EVERY = re.compile(r"^every\s*(?P<n>\d{1,3})\s*h$")


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed schedule: ``at`` (daily wall-clock time) or ``every`` (interval)."""

    text: str
    at: time | None = None
    every: timedelta | None = None


def parse_schedule(text: str) -> Schedule | None:
    """``None`` for an empty schedule (off); ``ValueError`` with the accepted forms else."""
    value = text.strip().lower()
    if not value:
        return None
    daily = _DAILY.match(value)
    if daily is not None:
        return Schedule(value, at=time(int(daily["h"]), int(daily["m"])))
    every = _EVERY.match(value)
    if every is not None and 1 <= int(every["n"]) <= 168:
        return Schedule(value, every=timedelta(hours=int(every["n"])))
    raise ValueError(
        f"{text!r} is not a schedule: write daily@HH:MM (e.g. daily@03:00) or every Nh "
        "(N from 1 to 168, e.g. every 6h), or leave it empty for none"
    )


def zone(name: str) -> ZoneInfo:
    """The time zone ``name``; ``ValueError`` when the system does not know it."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (e.g. Asia/Shanghai, UTC)") from None


def latest_slot(schedule: Schedule, now: datetime, tz: str = "UTC") -> datetime:
    """The newest slot of ``schedule`` at or before ``now`` (aware), in UTC."""
    now = now.astimezone(UTC)
    if schedule.every is not None:
        step = int(schedule.every.total_seconds())
        stamp = int(now.timestamp()) // step * step
        return datetime.fromtimestamp(stamp, UTC)
    assert schedule.at is not None
    local = now.astimezone(zone(tz))
    slot = datetime.combine(local.date(), schedule.at, tzinfo=local.tzinfo)
    if slot > local:
        slot = datetime.combine(local.date() - timedelta(days=1), schedule.at, tzinfo=local.tzinfo)
    return slot.astimezone(UTC)
