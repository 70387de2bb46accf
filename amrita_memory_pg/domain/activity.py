"""The activity heatmap's grid: which (local weekday, 2-hour slot) cell a moment falls in.

The idle-window planner (reference §9) works on a 7 × 12 grid in the configured time
zone: weekday 0 = Monday, slot = (hour × 60 + minute) // 120. An invalid zone name
falls back to a fixed UTC+08:00, as in the reference, so a typo never stops the bot.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SLOT_MINUTES = 120
SLOTS_PER_DAY = 12
DAYS = 7
FALLBACK_TZ = timezone(timedelta(hours=8), "UTC+08:00")


def resolve_timezone(name: str) -> tzinfo:
    """The zone named ``name``, or fixed UTC+08:00 when the name is not a known zone."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return FALLBACK_TZ


def heat_cell(moment: datetime, tz: tzinfo) -> tuple[int, int]:
    """(weekday 0–6 with 0 = Monday, slot 0–11) of an aware ``moment`` in ``tz``."""
    if moment.tzinfo is None:
        raise ValueError("heat_cell needs an aware datetime")
    local = moment.astimezone(tz)
    return local.weekday(), (local.hour * 60 + local.minute) // SLOT_MINUTES
