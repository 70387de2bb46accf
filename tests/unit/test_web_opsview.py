"""Pure parts of the operations pages: heatmap cells, the planned window, form numbers."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from amrita_memory_pg.domain.errors import KnowledgeError, ProfileRefused
from amrita_memory_pg.domain.planner import Plan
from amrita_memory_pg.web.opsview import (
    HEAT_LEVELS,
    heat_grid,
    page_number,
    pages,
    profile_key,
    revert_version,
    suggestion_number,
    window_cells,
)

TZ = ZoneInfo("Asia/Shanghai")


def _plan(start: datetime, minutes: int) -> Plan:
    return Plan(start, start + timedelta(minutes=minutes), minutes, "fine", 0, False, 1)


def test_window_cells_cover_every_slot_the_window_touches() -> None:
    # Sunday 23:30 for 3 hours: Sunday's last slot, then Monday 00:00-02:00 and 02:00-04:00
    start = datetime(2026, 11, 8, 23, 30, tzinfo=TZ)
    assert window_cells(_plan(start, 180), TZ) == {(6, 11), (0, 0), (0, 1)}
    # exactly one slot, on its boundaries
    assert window_cells(_plan(datetime(2026, 11, 4, 2, 0, tzinfo=TZ), 120), TZ) == {(2, 1)}
    # a window stored in another offset is placed in the planner's zone
    utc = datetime(2026, 11, 3, 19, 0, tzinfo=ZoneInfo("UTC"))  # Wednesday 03:00 Shanghai
    assert window_cells(_plan(utc, 60), TZ) == {(2, 1)}
    # an empty window touches nothing; a week-long one every cell, once
    assert window_cells(_plan(start, 0), TZ) == set()
    assert len(window_cells(_plan(start, 7 * 24 * 60), TZ)) == 84


def test_heat_grid_levels_are_relative_to_the_busiest_cell() -> None:
    values = [[0.0] * 12 for _ in range(7)]
    values[0][3] = 10.0
    values[4][5] = 5.0
    values[6][11] = 0.1
    grid = heat_grid(values, {(4, 5)})
    assert len(grid) == 7 and all(len(row) == 12 for row in grid)
    assert grid[0][3].level == HEAT_LEVELS - 1
    assert 1 <= grid[4][5].level < grid[0][3].level and grid[4][5].planned
    assert grid[6][11].level == 1 and grid[1][1].level == 0
    assert grid[0][3].label.startswith("周一 06:00–08:00")
    assert all(c.level == 0 for row in heat_grid([[0.0] * 12] * 7) for c in row)


def test_form_numbers_and_keys() -> None:
    assert [page_number(t) for t in (None, "", "3", "x", "0", "²")] == [1, 1, 3, 1, 1, 1]
    assert pages(0) == 1 and pages(26, 25) == 2
    assert suggestion_number("12") == 12
    for bad in ("", "1.5", "-1", "0", "9" * 30):
        with pytest.raises(KnowledgeError):
            suggestion_number(bad)
    assert revert_version("0") == 0
    for bad in ("", "-2", "v1"):
        with pytest.raises(ProfileRefused):
            revert_version(bad)
    assert profile_key(" 10001 ") == "QQPlatform_Private_10001"
    assert profile_key("QQPlatform_Private_10001") == "QQPlatform_Private_10001"
    for bad in ("", "QQPlatform_Group_777", "global"):
        with pytest.raises(ProfileRefused):
            profile_key(bad)
