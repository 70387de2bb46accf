"""Idle-window planner: the reference's §16 vectors, and each deliberate difference
(B6, B7, W9, W10, W11, W19) as a test named after it."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amrita_memory_pg.domain.planner import (
    CELLS,
    HeatState,
    Plan,
    PlannerConfig,
    _Run,
    _window,
    fallback_plan,
    legacy_delay_seconds,
    log_line,
    observe,
    plan,
    want_slots,
)

TZ = ZoneInfo("Asia/Shanghai")
CFG = PlannerConfig()
#: Wednesday 2026-03-04 14:30 local, the reference's "planned at 14:30 today"
NOW = datetime(2026, 3, 4, 14, 30, tzinfo=TZ)
TODAY = NOW.date()


def history(days: int, times: list[time], *, today: date = TODAY) -> HeatState:
    """The state after messages at ``times`` local on each of the ``days`` days before ``today``."""
    state = HeatState(tz_name="Asia/Shanghai")
    for back in range(days, 0, -1):
        d = today - timedelta(days=back)
        for t in times:
            state, _ = observe(state, datetime.combine(d, t, tzinfo=TZ), CFG, TZ)
    return state


def every(minutes: int, start: int = 0, end: int = 24 * 60) -> list[time]:
    return [time(m // 60, m % 60) for m in range(start, end, minutes)]


DAYTIME = every(30, 9 * 60)  # active 09:00–24:00


def window(p: Plan) -> tuple[str, str, int]:
    return (p.start.strftime("%a %H:%M"), p.end.strftime("%a %H:%M"), p.length_minutes)


# --- §16 vectors ---------------------------------------------------------------------------


def test_want_slots_vector() -> None:
    assert [want_slots(p, CFG) for p in range(8)] == [3, 3, 4, 6, 6, 6, 6, 6]


def test_want_slots_overflow_and_clamp() -> None:
    assert want_slots(10**6, CFG) == CFG.max_slots
    assert want_slots(1, PlannerConfig(base_slots=9, max_slots=6)) == 6


def test_legacy_delay_vector() -> None:
    got = [legacy_delay_seconds(p, 30, 1.5, 1440) for p in range(1, 13)]
    assert got == [1800, 2700, 4050, 6075, 9112, 13668, 20503, 30754, 46132, 69198, 86400, 86400]
    assert legacy_delay_seconds(0, 30, 1.5, 1440) == 1800


def test_fallback_vectors() -> None:
    p = fallback_plan(NOW, 1, CFG, TZ, "no_history")
    assert (p.start, p.end) == (
        datetime(2026, 3, 5, 3, tzinfo=TZ),
        datetime(2026, 3, 5, 5, tzinfo=TZ),
    )
    assert (
        p.describe() == "周四 03:00-05:00 (120min, tier=fallback, relax=0, forced=True, no_history)"
    )
    early = fallback_plan(datetime(2026, 3, 4, 2, 30, tzinfo=TZ), 1, CFG, TZ, "")
    assert early.start == datetime(2026, 3, 4, 3, tzinfo=TZ)
    late = fallback_plan(datetime(2026, 3, 4, 2, 59, 30, tzinfo=TZ), 1, CFG, TZ, "")
    assert late.start == datetime(2026, 3, 5, 3, tzinfo=TZ)


def test_no_history_plans_the_fallback_and_logs_it() -> None:
    p = plan(HeatState(tz_name="Asia/Shanghai"), NOW, 1, CFG, TZ)
    assert log_line(1, p) == (
        "[Subconscious] Rescheduled: penalty=#1, "
        "周四 03:00-05:00 (120min, tier=fallback, relax=0, forced=True, no_history)"
    )


def test_daytime_user_for_14_days_gets_mid_tier_night_window() -> None:
    state = history(14, DAYTIME)
    p = plan(state, NOW, 1, CFG, TZ)
    assert p.describe() == "周四 03:00-07:45 (285min, tier=mid, relax=0, forced=False)"
    relaxed = plan(state, NOW, 3, CFG, TZ)
    assert relaxed.describe() == "周四 03:00-07:45 (285min, tier=mid, relax=1, forced=False)"


def test_daytime_user_for_60_days_gets_fine_tier() -> None:
    p = plan(history(60, DAYTIME), NOW, 1, CFG, TZ)
    assert (p.tier, window(p)) == ("fine", ("Thu 03:00", "Thu 07:45", 285))


def test_two_messages_a_day_for_3_days_gets_coarse_tier() -> None:
    p = plan(history(3, [time(10), time(20)]), NOW, 1, CFG, TZ)
    assert (p.tier, window(p), p.forced) == ("coarse", ("Thu 03:00", "Thu 09:45", 405), False)


def test_context_dict_and_to_dict() -> None:
    p = plan(history(14, DAYTIME), NOW, 1, CFG, TZ)
    assert p.context_dict() == {
        "window_start": "2026-03-05 03:00",
        "window_end": "2026-03-05 07:45",
        "planned_minutes": 285,
        "tier": "mid",
        "relaxed_steps": 0,
        "forced": False,
        "note": "",
    }
    assert p.to_dict()["start"] == "2026-03-05T03:00:00+08:00"


# --- deliberate differences ------------------------------------------------------------------


def test_w11_b7_busy_around_the_clock_runs_within_a_day_at_the_target_hour() -> None:
    """Reference: the 00:00–02:00 slot next week, window 01:35–01:45 (10 min). Here: the
    least busy slot within 24 h, nearest the target hour, a full window in it."""
    p = plan(history(60, every(30)), NOW, 1, CFG, TZ)
    assert p.forced
    assert p.start - NOW < timedelta(days=1)
    assert window(p) == ("Thu 03:00", "Thu 03:45", 45)


def coarse_only(hot: set[int]) -> HeatState:
    """A state with no sample days (tier coarse only), ``hot`` slots busy, others empty."""
    coarse = tuple(10.0 if s in hot else 0.0 for s in range(12))
    return HeatState(coarse=coarse, tz_name="Asia/Shanghai", last_update=NOW.timestamp())


def test_b6_forced_stage_takes_the_longest_run_not_the_soonest() -> None:
    # Cold: 16:00–18:00 (1 slot, soonest) and 20:00–24:00 (2 slots) today and tomorrow.
    state = coarse_only({0, 1, 2, 3, 4, 5, 6, 7, 9})
    cfg = PlannerConfig(max_relax_steps=0)  # want 3, no halving: only the forced stage
    p = plan(state, NOW, 1, cfg, TZ)
    assert p.forced and p.tier == "coarse"
    assert window(p) == ("Wed 20:00", "Wed 23:45", 225)


def test_b7_target_hour_after_the_segment_starts_at_the_segment_start() -> None:
    run = _Run(datetime(2026, 3, 5, 0, tzinfo=TZ), datetime(2026, 3, 5, 2, tzinfo=TZ), 1)
    got = _window(run, NOW, CFG, TZ)
    assert got is not None
    start, end, minutes, note = got
    assert (start.hour, start.minute, end.hour, end.minute, minutes, note) == (0, 0, 1, 45, 105, "")


def test_b7_target_hour_before_the_segment_on_the_next_day_is_used() -> None:
    run = _Run(datetime(2026, 3, 4, 22, tzinfo=TZ), datetime(2026, 3, 5, 6, tzinfo=TZ), 4)
    got = _window(run, NOW, CFG, TZ)
    assert got is not None and got[0] == datetime(2026, 3, 5, 3, tzinfo=TZ)


def test_w9_window_is_the_cold_segment_from_the_target_hour_to_buffer_before_its_end() -> None:
    """No minute-level refinement over past timestamps (it never changed a plan): past
    message at 03:10 (too few to make its slot busy) does not split the window."""
    state = history(14, DAYTIME)
    state, _ = observe(state, datetime(2026, 3, 3, 3, 10, tzinfo=TZ), CFG, TZ)
    p = plan(state, NOW, 1, CFG, TZ)
    assert window(p) == ("Thu 03:00", "Thu 07:45", 285)


def test_w9_segment_already_started_starts_a_minute_from_now() -> None:
    run = _Run(datetime(2026, 3, 4, 12, tzinfo=TZ), datetime(2026, 3, 4, 16, tzinfo=TZ), 2)
    got = _window(run, NOW, CFG, TZ)
    assert got is not None
    assert got[0] == NOW + timedelta(minutes=1) and got[1] == datetime(
        2026, 3, 4, 15, 45, tzinfo=TZ
    )


def test_w10_bursts_are_merged_at_observation_time() -> None:
    state = HeatState(tz_name="Asia/Shanghai")
    counted = []
    for minute in (0, 1, 5, 14, 16, 40):
        state, c = observe(state, datetime(2026, 3, 4, 10, minute, tzinfo=TZ), CFG, TZ)
        counted.append(c)
    # 10:00 counts; 10:01–10:14 are its burst; 10:16 is 16 min after the last counted one.
    assert counted == [True, False, False, False, True, True]
    assert sum(state.coarse) == pytest.approx(3.0, rel=1e-2)  # minus 40 min of decay
    assert state.seen_days == ("2026-03-04",)


def test_w19_planning_uses_the_given_now_not_the_wall_clock() -> None:
    """Sample days are counted back from the plan's own day: history in 2031 planned
    at a 2031 moment still reaches tier fine, whenever the test runs."""
    today = date(2031, 6, 4)
    state = history(60, DAYTIME, today=today)
    now = datetime.combine(today, time(14, 30), tzinfo=TZ)
    assert plan(state, now, 1, CFG, TZ).tier == "fine"


# --- state and properties ------------------------------------------------------------------


def test_decay_halves_at_the_half_life() -> None:
    state, _ = observe(HeatState(tz_name="Asia/Shanghai"), NOW, CFG, TZ)
    later, _ = observe(state, NOW + timedelta(days=14), CFG, TZ)
    assert sum(later.coarse) == pytest.approx(1.5)
    assert sum(later.fine) == pytest.approx(1 + 2 ** (-0.5))


def test_state_json_round_trip_and_load_rules() -> None:
    state = history(3, [time(10)])
    assert HeatState.from_json(state.to_json(), "Asia/Shanghai") == HeatState.from_json(
        HeatState.from_json(state.to_json(), "Asia/Shanghai").to_json(), "Asia/Shanghai"
    )
    assert HeatState.from_json(state.to_json(), "Europe/Berlin").has_history() is False
    assert HeatState.from_json({"fine": [1.0]}, "Asia/Shanghai").has_history() is False
    assert HeatState.from_json("junk", "Asia/Shanghai") == HeatState(tz_name="Asia/Shanghai")


def test_from_counts_seeds_from_the_activity_heatmap() -> None:
    grid = [[0] * 12 for _ in range(7)]
    grid[2][5] = 4
    grid[3][5] = 2
    state = HeatState.from_counts(grid, "Asia/Shanghai")
    assert len(state.fine) == CELLS and state.fine[2 * 12 + 5] == 4.0
    assert state.coarse[5] == 6.0 and state.has_history()


def test_a_cold_run_across_midnight_is_one_segment() -> None:
    # Cold 20:00–06:00: one run across midnight, not two.
    state = coarse_only({3, 4, 5, 6, 7, 8, 9})
    p = plan(state, NOW, 1, CFG, TZ)
    assert window(p) == ("Thu 03:00", "Thu 05:45", 165)
    assert not p.forced


@given(
    minutes=st.lists(st.integers(0, 60 * 24 * 30), min_size=1, max_size=40),
    penalty=st.integers(0, 20),
    at=st.integers(0, 60 * 24 * 7),
)
def test_every_plan_is_in_the_future_and_within_a_week(
    minutes: list[int], penalty: int, at: int
) -> None:
    base = datetime(2026, 2, 1, tzinfo=UTC)
    state = HeatState(tz_name="Asia/Shanghai")
    for m in sorted(minutes):
        state, _ = observe(state, base + timedelta(minutes=m), CFG, TZ)
    now = base + timedelta(days=30, minutes=at)
    p = plan(state, now, penalty, CFG, TZ)
    assert now < p.start < p.end <= now + timedelta(days=8)
    assert p.length_minutes >= 1
