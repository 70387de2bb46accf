"""``[backup] schedule``: the two accepted forms, their slots, and a sentence for the rest."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from amrita_memory_pg.domain.backup_schedule import latest_slot, parse_schedule
from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.settings import load_settings


def test_daily_slots_are_wall_clock_in_the_time_zone() -> None:
    daily = parse_schedule("daily@03:00")
    assert daily is not None
    # 05:00 UTC = 13:00 in Shanghai: today's 03:00 local (= 19:00 UTC yesterday)
    now = datetime(2026, 12, 4, 5, 0, tzinfo=UTC)
    assert latest_slot(daily, now, "Asia/Shanghai") == datetime(2026, 12, 3, 19, 0, tzinfo=UTC)
    # before 03:00 UTC the slot is yesterday's
    early = datetime(2026, 12, 4, 2, 59, tzinfo=UTC)
    assert latest_slot(daily, early, "UTC") == datetime(2026, 12, 3, 3, 0, tzinfo=UTC)
    assert latest_slot(daily, datetime(2026, 12, 4, 3, 0, tzinfo=UTC), "UTC").day == 4


def test_every_n_hours_aligns_on_utc_midnight() -> None:
    every = parse_schedule("every 6h")
    assert every is not None
    now = datetime(2026, 12, 4, 13, 59, tzinfo=UTC)
    assert latest_slot(every, now) == datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    assert parse_schedule("") is None


@pytest.mark.parametrize("bad", ["nightly", "daily@25:00", "every 0h", "every 200h", "0 3 * * *"])
def test_a_bad_schedule_is_refused_with_the_forms(bad: str) -> None:
    with pytest.raises(ConfigError, match="daily@HH:MM"):
        load_settings(env={}, read_default_files=False, overrides={"backup.schedule": bad})
    with pytest.raises(ConfigError, match="unknown time zone"):
        load_settings(env={}, read_default_files=False, overrides={"backup.timezone": "Mars/Base"})
