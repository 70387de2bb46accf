"""When the next L3 cycle of a target runs: pure decisions, time passed in (reference §8.2–8.3).

Three moments decide a run; each returns a :class:`Decision` (the time, and the planned
window when the idle-window planner is on):

- :func:`after_message` — a target's message came in: plan with the new penalty;
- :func:`after_cycle` — a cycle ended, success or failure: the next run is always
  planned (reference W17: the reference scheduled nothing after a cycle);
- :func:`after_restart` — the process started: keep the stored run if it is still
  ahead; if it was missed while the bot was down, run in a minute when its window is
  still open (or in the fixed back-off mode), otherwise plan a new window.

With the planner off the fixed back-off of §8.3 applies: ``legacy_delay_seconds(penalty)``
after a message, and after a failed cycle the same formula over the failure streak
(30 min, 45 min, … up to the cap), so a broken model is retried, not hammered. After a
success with nothing new (penalty 0) the next run is one cap away (daily by default),
not one base delay away, so an idle target costs one cycle a day at most.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from typing import Any

from amrita_memory_pg.domain.planner import (
    HeatState,
    Plan,
    PlannerConfig,
    fallback_plan,
    legacy_delay_seconds,
    plan,
)

#: never schedule closer than this (the reference's floor: a run needs a moment to start)
MIN_DELAY = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class ScheduleRules:
    """The ``[subconscious]`` scheduling keys, resolved (zone object included)."""

    tz: tzinfo
    tz_name: str
    use_planner: bool = True
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    base_delay_minutes: float = 30
    delay_multiplier: float = 1.5
    max_delay_minutes: float = 1440

    def backoff(self, count: int) -> timedelta:
        return timedelta(
            seconds=legacy_delay_seconds(
                count, self.base_delay_minutes, self.delay_multiplier, self.max_delay_minutes
            )
        )


@dataclass(frozen=True, slots=True)
class TargetState:
    """One target's row of ``l3_state``."""

    target_key: str
    penalty: int = 0
    runs: int = 0
    failures: int = 0
    failures_in_row: int = 0
    running_since: datetime | None = None
    last_run_end: datetime | None = None
    last_success_at: datetime | None = None
    last_failure_at: datetime | None = None
    last_error: str | None = None
    last_summary: str | None = None
    next_run_at: datetime | None = None
    #: the planned window as ``Plan.to_dict()`` (None in the fixed back-off mode)
    plan: dict[str, Any] | None = None
    heat: HeatState = field(default_factory=HeatState)

    def idle_plan(self) -> dict[str, Any] | None:
        """The stored window the way ``subconscious_get_context`` shows it (§9.8)."""
        if not self.plan:
            return None
        try:
            return plan_from_dict(self.plan).context_dict()
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class Decision:
    """Run at ``run_at``; ``plan`` is the window it was taken from (planner on)."""

    run_at: datetime
    plan: Plan | None
    #: why, for the log: message | cycle_ok | cycle_failed | idle | kept | missed_run_soon |
    #: replanned | held_elsewhere (another process of the fleet runs the cycle)
    reason: str

    def plan_dict(self) -> dict[str, Any] | None:
        return self.plan.to_dict() if self.plan is not None else None


def plan_from_dict(raw: dict[str, Any]) -> Plan:
    """The inverse of ``Plan.to_dict`` (the stored ``l3_state.plan``)."""
    return Plan(
        start=datetime.fromisoformat(raw["start"]),
        end=datetime.fromisoformat(raw["end"]),
        length_minutes=int(raw["length_minutes"]),
        tier=str(raw["tier"]),
        relaxed_steps=int(raw["relaxed_steps"]),
        forced=bool(raw["forced"]),
        penalty=int(raw["penalty"]),
        note=str(raw.get("note") or ""),
    )


def _planned(
    heat: HeatState, penalty: int, now: datetime, rules: ScheduleRules, why: str
) -> Decision:
    window = plan(heat, now, penalty, rules.planner, rules.tz)
    return Decision(max(window.start, now + MIN_DELAY), window, why)


def after_message(
    heat: HeatState, penalty: int, now: datetime, rules: ScheduleRules, *, had_history: bool = True
) -> Decision:
    """The run after a target's message (``penalty`` and ``heat`` already count it).

    ``had_history``: whether the heatmap had any weight *before* this message; the very
    first message plans the fallback window (one message is no pattern; reference §8.3).
    """
    if rules.use_planner:
        if not had_history:
            window = fallback_plan(now, penalty, rules.planner, rules.tz, "no_history")
            return Decision(max(window.start, now + MIN_DELAY), window, "message")
        return _planned(heat, penalty, now, rules, "message")
    return Decision(now + max(rules.backoff(penalty), MIN_DELAY), None, "message")


def after_cycle(
    ok: bool,
    penalty: int,
    failures_in_row: int,
    heat: HeatState,
    now: datetime,
    rules: ScheduleRules,
) -> Decision:
    """The run after a cycle ended at ``now`` (``penalty``/``failures_in_row`` as updated)."""
    why = "cycle_ok" if ok else "cycle_failed"
    if rules.use_planner:
        return _planned(heat, penalty, now, rules, why)
    if not ok:
        return Decision(now + max(rules.backoff(failures_in_row), MIN_DELAY), None, why)
    if penalty == 0:
        return Decision(now + timedelta(minutes=rules.max_delay_minutes), None, "idle")
    return Decision(now + max(rules.backoff(penalty), MIN_DELAY), None, why)


def after_restart(state: TargetState, now: datetime, rules: ScheduleRules) -> Decision | None:
    """The run to schedule when the process starts; None when nothing was planned."""
    if state.next_run_at is None:
        if state.penalty > 0:
            return _replan(state, now, rules)
        return None
    if state.next_run_at >= now + MIN_DELAY:
        stored = plan_from_dict(state.plan) if state.plan else None
        return Decision(state.next_run_at, stored, "kept")
    # Missed (the bot was down) or due within a minute.
    if state.plan:
        window_end = datetime.fromisoformat(str(state.plan["end"]))
        room = MIN_DELAY + timedelta(minutes=rules.planner.run_estimate_minutes)
        if window_end - now >= room:  # the window is still open, with time to run
            return Decision(now + MIN_DELAY, plan_from_dict(state.plan), "missed_run_soon")
        return _replan(state, now, rules)
    return Decision(now + MIN_DELAY, None, "missed_run_soon")


def _replan(state: TargetState, now: datetime, rules: ScheduleRules) -> Decision:
    if rules.use_planner:
        return _planned(state.heat, state.penalty, now, rules, "replanned")
    return Decision(now + max(rules.backoff(state.penalty), MIN_DELAY), None, "replanned")
