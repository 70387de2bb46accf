"""Scheduler decisions with time passed in: after a message, after a cycle, after a restart."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from amrita_memory_pg.domain.planner import HeatState, fallback_plan, observe
from amrita_memory_pg.domain.scheduling import (
    MIN_DELAY,
    ScheduleRules,
    TargetState,
    after_cycle,
    after_message,
    after_restart,
    plan_from_dict,
)

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 3, 4, 14, 30, tzinfo=TZ)
PLANNER = ScheduleRules(tz=TZ, tz_name="Asia/Shanghai")
LEGACY = ScheduleRules(tz=TZ, tz_name="Asia/Shanghai", use_planner=False)
EMPTY = HeatState(tz_name="Asia/Shanghai")
LEGACY_VECTOR = [1800, 2700, 4050, 6075, 9112, 13668, 20503, 30754, 46132, 69198, 86400, 86400]


def test_first_message_with_the_planner_takes_the_fallback_window() -> None:
    one, _ = observe(EMPTY, NOW, PLANNER.planner, TZ)
    d = after_message(one, 1, NOW, PLANNER, had_history=False)
    assert d.plan is not None and d.plan.note == "no_history"
    assert d.run_at == datetime(2026, 3, 5, 3, tzinfo=TZ)


@pytest.mark.parametrize(("penalty", "seconds"), list(enumerate(LEGACY_VECTOR, start=1)))
def test_planner_off_a_message_backs_off_by_the_reference_vector(
    penalty: int, seconds: int
) -> None:
    d = after_message(EMPTY, penalty, NOW, LEGACY)
    assert (d.run_at - NOW).total_seconds() == seconds and d.plan is None


def test_planner_off_a_failed_cycle_backs_off_by_its_failure_streak() -> None:
    got = [
        (after_cycle(False, 7, n, EMPTY, NOW, LEGACY).run_at - NOW).total_seconds()
        for n in (1, 2, 3)
    ]
    assert got == [1800, 2700, 4050]


def test_planner_off_a_success_with_nothing_new_waits_the_cap() -> None:
    d = after_cycle(True, 0, 0, EMPTY, NOW, LEGACY)
    assert (d.run_at - NOW, d.reason) == (timedelta(minutes=1440), "idle")
    busy = after_cycle(True, 2, 0, EMPTY, NOW, LEGACY)
    assert (busy.run_at - NOW).total_seconds() == 2700


def test_planner_on_every_cycle_end_plans_the_next_window_w17() -> None:
    for ok in (True, False):
        d = after_cycle(ok, 0, 0 if ok else 1, EMPTY, NOW, PLANNER)
        assert d.plan is not None and d.run_at == d.plan.start > NOW
        assert d.reason == ("cycle_ok" if ok else "cycle_failed")


def test_a_run_is_never_closer_than_a_minute() -> None:
    rules = ScheduleRules(tz=TZ, tz_name="x", use_planner=False, base_delay_minutes=0)
    assert after_message(EMPTY, 1, NOW, rules).run_at == NOW + MIN_DELAY


def stored(run_at: datetime | None, *, penalty: int = 1, window: bool = True) -> TargetState:
    plan = fallback_plan(NOW, penalty, PLANNER.planner, TZ, "no_history") if window else None
    return TargetState(
        target_key="QQPlatform_Private_1",
        penalty=penalty,
        next_run_at=run_at,
        plan=plan.to_dict() if plan else None,
    )


def test_restart_keeps_a_stored_run_still_ahead() -> None:
    state = stored(datetime(2026, 3, 5, 3, tzinfo=TZ))
    d = after_restart(state, NOW, PLANNER)
    assert d is not None and (d.run_at, d.reason) == (state.next_run_at, "kept")
    assert d.plan == plan_from_dict(state.plan or {})


def test_restart_inside_a_missed_window_runs_in_a_minute() -> None:
    state = stored(datetime(2026, 3, 5, 3, tzinfo=TZ))
    later = datetime(2026, 3, 5, 4, tzinfo=TZ)  # the bot was down at 03:00; window to 05:00
    d = after_restart(state, later, PLANNER)
    assert d is not None and (d.run_at, d.reason) == (later + MIN_DELAY, "missed_run_soon")


def test_restart_after_a_missed_window_plans_a_new_one() -> None:
    state = stored(datetime(2026, 3, 5, 3, tzinfo=TZ))
    later = datetime(2026, 3, 5, 9, tzinfo=TZ)
    d = after_restart(state, later, PLANNER)
    assert d is not None and d.reason == "replanned"
    assert d.run_at == datetime(2026, 3, 6, 3, tzinfo=TZ)


def test_restart_in_back_off_mode_runs_a_missed_run_in_a_minute() -> None:
    state = stored(NOW - timedelta(hours=1), window=False)
    d = after_restart(state, NOW, LEGACY)
    assert d is not None and (d.run_at, d.reason) == (NOW + MIN_DELAY, "missed_run_soon")


def test_restart_with_nothing_planned_and_nothing_pending_schedules_nothing() -> None:
    assert after_restart(stored(None, penalty=0, window=False), NOW, PLANNER) is None
    pending = after_restart(stored(None, penalty=2, window=False), NOW, PLANNER)
    assert pending is not None and pending.reason == "replanned"


def test_idle_plan_is_the_context_dict_of_the_stored_plan() -> None:
    state = stored(datetime(2026, 3, 5, 3, tzinfo=TZ))
    assert state.idle_plan() == {
        "window_start": "2026-03-05 03:00",
        "window_end": "2026-03-05 05:00",
        "planned_minutes": 120,
        "tier": "fallback",
        "relaxed_steps": 0,
        "forced": True,
        "note": "no_history",
    }
    assert TargetState(target_key="k", plan={"start": "bad"}).idle_plan() is None
