"""The heatmap grid cell: local weekday and 2-hour slot, with the reference's tz fallback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amrita_memory_pg.domain.activity import FALLBACK_TZ, heat_cell, resolve_timezone


def test_shanghai_wednesday_evening_utc_is_thursday_early_morning() -> None:
    tz = resolve_timezone("Asia/Shanghai")
    assert heat_cell(datetime(2026, 3, 4, 18, 30, tzinfo=UTC), tz) == (3, 1)
    assert heat_cell(datetime(2026, 3, 4, 15, 59, tzinfo=UTC), tz) == (2, 11)


def test_an_unknown_zone_falls_back_to_utc_plus_eight() -> None:
    assert resolve_timezone("Mars/Olympus") is FALLBACK_TZ
    assert resolve_timezone("") is FALLBACK_TZ


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError):
        heat_cell(datetime(2026, 1, 1), FALLBACK_TZ)  # noqa: DTZ001


@given(st.integers(min_value=0, max_value=10**9))
def test_cells_are_always_inside_the_grid(seconds: int) -> None:
    moment = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    weekday, slot = heat_cell(moment, resolve_timezone("America/New_York"))
    assert 0 <= weekday <= 6
    assert 0 <= slot <= 11
