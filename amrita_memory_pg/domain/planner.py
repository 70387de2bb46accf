"""Idle-window planner: when the L3 loop should run for one target (reference §9).

Pure code: every function takes the moment it plans for (``now``) and the zone; nothing
reads the wall clock (reference W19). The evidence is a 7 × 12 heatmap of the target's
messages (weekday 0 = Monday × 2-hour local slot) kept as two exponentially decayed
layers: ``fine`` (per weekday, half-life ``fine_tau_days``) and ``coarse`` (all days
folded into 12 slots, half-life ``coarse_tau_days``), plus the local days the target
was seen on. A plan is the first window that, in order of preference:

1. lies in a run of *cold* slots (share ≤ ``cold_pct_max`` and count ≤ ``cold_abs_max``)
   today or tomorrow at least ``want_slots(penalty)`` slots long, using the most specific
   tier of the heatmap that has enough sample days (``fine`` → ``mid`` → ``coarse``);
2. the same with the required length halved up to ``max_relax_steps`` times;
3. forced: the longest cold run of any length (reference B6: the reference took the
   soonest one although it said "longest");
4. forced: the least busy 2-hour slot in the next 24 hours, the one nearest the target
   hour among those within :data:`LIGHTEST_TIE_PCT` of the minimum (reference W11: the
   reference could go a week out over a 0.001 weight difference);
5. the fallback window: the next ``target_hour:00`` for ``fallback_minutes``.

Differences from the reference, each with a named test in tests/unit/test_planner.py:

- B6, B7 (a target hour after the segment's end starts the window at the segment start
  instead of 25 minutes before its end), W11, W19 as above;
- W9: the minute-level "refinement" over raw message timestamps is **removed**. The
  reference searched the planned (future) segment for gaps between recorded (past)
  timestamps, so the whole segment was always free and the step never changed a plan.
  A window is now the cold segment itself, started at the target hour when that falls
  inside it, ending ``buffer_minutes`` before the segment ends.
- W10 / D7: ``noise_gap_minutes`` merges bursts at observation time — a message less
  than the gap after the last *counted* one adds nothing to the heatmap — instead of
  only inside the (degenerate) refinement. The loop's own runs are never observed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any, Literal

from amrita_memory_pg.domain.activity import DAYS, SLOT_MINUTES, SLOTS_PER_DAY

CELLS = DAYS * SLOTS_PER_DAY
SEEN_DAYS_CAP = 240
WEEKDAY_NAMES = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
#: a lightest-slot candidate this close (in normalised share) to the minimum is as good
#: as the minimum; among those the one nearest the target hour wins (fix of W11)
LIGHTEST_TIE_PCT = 0.01
_EPS = 1e-9

Tier = Literal["fine", "mid", "coarse"]
TIERS: tuple[Tier, ...] = ("fine", "mid", "coarse")


@dataclass(frozen=True, slots=True)
class PlannerConfig:
    """The ``[subconscious] idle_*`` keys (reference §9.2), defaults as there."""

    fine_tau_days: float = 28.0
    coarse_tau_days: float = 14.0
    shrink_k: float = 4.0
    min_sample_days_fine: int = 6
    min_sample_days_mid: int = 3
    cold_pct_max: float = 0.05
    cold_abs_max: float = 1.0
    target_hour: int = 3
    base_slots: int = 3
    max_slots: int = 6
    penalty_multiplier: float = 1.5
    max_relax_steps: int = 3
    buffer_minutes: int = 15
    run_estimate_minutes: int = 10
    fallback_minutes: int = 120
    noise_gap_minutes: int = 15


@dataclass(frozen=True, slots=True)
class HeatState:
    """One target's decayed heatmap, as stored in ``l3_state.heat``.

    ``fine[wd × 12 + slot]`` and ``coarse[slot]`` are the decayed counts as of
    ``last_update`` (epoch seconds, 0 = never); ``last_counted`` is the last message
    that added to them (the burst anchor); ``seen_days`` the local ISO dates the target
    was seen on (newest 240); ``tz_name`` the zone the cells were computed in.
    """

    fine: tuple[float, ...] = (0.0,) * CELLS
    coarse: tuple[float, ...] = (0.0,) * SLOTS_PER_DAY
    seen_days: tuple[str, ...] = ()
    last_update: float = 0.0
    last_counted: float = 0.0
    tz_name: str = ""

    def has_history(self) -> bool:
        return sum(self.coarse) > 1e-6

    def to_json(self) -> dict[str, Any]:
        return {
            "fine": [round(v, 6) for v in self.fine],
            "coarse": [round(v, 6) for v in self.coarse],
            "seen_days": list(self.seen_days),
            "last_update": self.last_update,
            "last_counted": self.last_counted,
            "tz_name": self.tz_name,
        }

    @classmethod
    def from_json(cls, raw: object, tz_name: str) -> HeatState:
        """The stored state, or a fresh one when it is missing, malformed, or was
        computed in another zone (its cells would be shifted: reference §9.2 load rules)."""
        if not isinstance(raw, Mapping):
            return cls(tz_name=tz_name)
        try:
            fine = tuple(float(v) for v in raw.get("fine", ()))
            coarse = tuple(float(v) for v in raw.get("coarse", ()))
            saved_tz = str(raw.get("tz_name") or "")
            if len(fine) != CELLS or len(coarse) != SLOTS_PER_DAY:
                return cls(tz_name=tz_name)
            if saved_tz and saved_tz != tz_name:
                return cls(tz_name=tz_name)
            days = tuple(str(d) for d in raw.get("seen_days", ()))[-SEEN_DAYS_CAP:]
            for d in days:
                date.fromisoformat(d)
            return cls(
                fine=fine,
                coarse=coarse,
                seen_days=days,
                last_update=float(raw.get("last_update", 0.0)),
                last_counted=float(raw.get("last_counted", 0.0)),
                tz_name=tz_name,
            )
        except (TypeError, ValueError):
            return cls(tz_name=tz_name)

    @classmethod
    def from_counts(cls, grid: Sequence[Sequence[int]], tz_name: str) -> HeatState:
        """A start from the raw ``activity_heatmap`` counts (``grid[weekday][slot]``),
        recorded by the chat hooks before the loop was enabled: undecayed, no sample
        days (so the plan uses the ``coarse`` tier until days are seen)."""
        fine = tuple(float(grid[wd][s]) for wd in range(DAYS) for s in range(SLOTS_PER_DAY))
        coarse = tuple(float(sum(grid[wd][s] for wd in range(DAYS))) for s in range(SLOTS_PER_DAY))
        return cls(fine=fine, coarse=coarse, tz_name=tz_name)


def slot_of(moment: datetime, tz: tzinfo) -> tuple[int, int]:
    """(weekday, slot) of an aware moment in ``tz``."""
    local = moment.astimezone(tz)
    return local.weekday(), (local.hour * 60 + local.minute) // SLOT_MINUTES


def decay(state: HeatState, now: datetime, cfg: PlannerConfig) -> HeatState:
    """Both layers decayed to ``now``: × 2^(−Δdays / half-life)."""
    ts = now.timestamp()
    if state.last_update <= 0:
        return replace(state, last_update=ts)
    dt = (ts - state.last_update) / 86400.0
    if dt <= 1e-6:
        return state
    ff = 2.0 ** (-dt / cfg.fine_tau_days)
    fc = 2.0 ** (-dt / cfg.coarse_tau_days)
    return replace(
        state,
        fine=tuple(v * ff for v in state.fine),
        coarse=tuple(v * fc for v in state.coarse),
        last_update=ts,
    )


def observe(
    state: HeatState, moment: datetime, cfg: PlannerConfig, tz: tzinfo
) -> tuple[HeatState, bool]:
    """Count one user message; returns the new state and whether it was counted.

    A message less than ``noise_gap_minutes`` after the last counted one belongs to the
    same burst and adds nothing (its day is still marked seen). Only user messages are
    observed; the loop's own runs never are (reference W10).
    """
    ts = moment.timestamp()
    day = moment.astimezone(tz).date().isoformat()
    days = state.seen_days if day in state.seen_days else (*state.seen_days, day)
    days = tuple(sorted(days))[-SEEN_DAYS_CAP:]
    gap = cfg.noise_gap_minutes * 60.0
    if state.last_counted > 0 and 0 <= ts - state.last_counted < gap:
        return replace(state, seen_days=days), False
    decayed = decay(state, moment, cfg)
    wd, slot = slot_of(moment, tz)
    fine = list(decayed.fine)
    coarse = list(decayed.coarse)
    fine[wd * SLOTS_PER_DAY + slot] += 1.0
    coarse[slot] += 1.0
    return (
        replace(
            decayed,
            fine=tuple(fine),
            coarse=tuple(coarse),
            seen_days=days,
            last_counted=max(ts, state.last_counted),
            tz_name=state.tz_name,
        ),
        True,
    )


def want_slots(penalty: int, cfg: PlannerConfig) -> int:
    """Required cold run: clamp(round(base × mult^max(0, penalty − 1)), 1, max_slots).

    ``round`` is half-to-even like the reference (penalty 2 → 4.5 → 4).
    """
    try:
        raw = cfg.base_slots * cfg.penalty_multiplier ** max(0, penalty - 1)
    except OverflowError:
        return cfg.max_slots
    if math.isnan(raw):
        return cfg.base_slots
    if math.isinf(raw):
        return cfg.max_slots
    return max(1, min(cfg.max_slots, round(raw)))


def legacy_delay_seconds(penalty: int, base_minutes: float, mult: float, cap_minutes: float) -> int:
    """The fixed back-off of the planner-off mode (reference §8.3), in seconds:
    min(base × mult^min(max(penalty − 1, 0), 32), cap) minutes."""
    minutes = min(base_minutes * mult ** min(max(penalty - 1, 0), 32), cap_minutes)
    return int(minutes * 60)


@dataclass(frozen=True, slots=True)
class Plan:
    """A concrete window, local times in the planner's zone."""

    start: datetime
    end: datetime
    length_minutes: int
    tier: str
    relaxed_steps: int
    forced: bool
    penalty: int
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "length_minutes": self.length_minutes,
            "tier": self.tier,
            "relaxed_steps": self.relaxed_steps,
            "forced": self.forced,
            "penalty": self.penalty,
            "note": self.note,
        }

    def context_dict(self) -> dict[str, Any]:
        """What ``subconscious_get_context`` shows as ``idle_plan`` (reference §9.8)."""
        return {
            "window_start": self.start.strftime("%Y-%m-%d %H:%M"),
            "window_end": self.end.strftime("%Y-%m-%d %H:%M"),
            "planned_minutes": self.length_minutes,
            "tier": self.tier,
            "relaxed_steps": self.relaxed_steps,
            "forced": self.forced,
            "note": self.note,
        }

    def describe(self) -> str:
        """``周四 03:00-05:00 (120min, tier=fallback, relax=0, forced=True, no_history)``."""
        text = (
            f"{WEEKDAY_NAMES[self.start.weekday()]} "
            f"{self.start:%H:%M}-{self.end:%H:%M} "
            f"({self.length_minutes}min, tier={self.tier}, relax={self.relaxed_steps}, "
            f"forced={self.forced}"
        )
        return text + (f", {self.note})" if self.note else ")")


def log_line(penalty: int, plan: Plan) -> str:
    """The reference's §9.9 line."""
    return f"[Subconscious] Rescheduled: penalty=#{penalty}, {plan.describe()}"


def fallback_plan(now: datetime, penalty: int, cfg: PlannerConfig, tz: tzinfo, note: str) -> Plan:
    """The next ``target_hour:00`` (today if more than a minute away) for ``fallback_minutes``."""
    local = now.astimezone(tz)
    start = datetime.combine(local.date(), time(cfg.target_hour), tzinfo=tz)
    if start <= local + timedelta(minutes=1):
        start = datetime.combine(local.date() + timedelta(days=1), time(cfg.target_hour), tzinfo=tz)
    return Plan(
        start=start,
        end=start + timedelta(minutes=cfg.fallback_minutes),
        length_minutes=cfg.fallback_minutes,
        tier="fallback",
        relaxed_steps=0,
        forced=True,
        penalty=penalty,
        note=note,
    )


# --- tiers -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tables:
    """The evidence for one plan: the state, the zone, today and the sample-day counts."""

    state: HeatState
    cfg: PlannerConfig
    today: date
    active: Mapping[int, int] = field(default_factory=dict)

    def active_days(self, weekdays: Iterable[int]) -> int:
        wanted = set(weekdays)
        return sum(n for wd, n in self.active.items() if wd in wanted)

    def qualifies(self, tier: Tier, wd: int) -> bool:
        if tier == "fine":
            return self.active_days([wd]) >= self.cfg.min_sample_days_fine
        if tier == "mid":
            return self.active_days(_group(wd)) >= self.cfg.min_sample_days_mid
        return True

    def tiers(self, wd: int) -> list[Tier]:
        return [t for t in TIERS if self.qualifies(t, wd)]

    def neighbour(self, tier: Tier, wd: int) -> Tier:
        """The tier used for the day after (when a run crosses midnight)."""
        if tier == "fine":
            if self.qualifies("fine", wd):
                return "fine"
            tier = "mid"
        if tier == "mid" and self.qualifies("mid", wd):
            return "mid"
        return "coarse"

    def table(self, tier: Tier, wd: int) -> tuple[list[float], list[float]]:
        """(weights, counts) of weekday ``wd`` in ``tier``; weights shrunk toward coarse."""
        coarse = list(self.state.coarse)
        if tier == "coarse":
            return coarse, coarse
        days = [wd] if tier == "fine" else list(_group(wd))
        rows = [self.state.fine[d * SLOTS_PER_DAY : (d + 1) * SLOTS_PER_DAY] for d in days]
        cells = [sum(r[s] for r in rows) / len(rows) for s in range(SLOTS_PER_DAY)]
        n = self.active_days(days)
        k = self.cfg.shrink_k
        alpha = n / (n + k) if n + k > 0 else 0.0
        nc, ng = _normalize(cells), _normalize(coarse)
        return [alpha * a + (1 - alpha) * b for a, b in zip(nc, ng, strict=True)], cells

    def cold(self, tier: Tier, wd: int) -> list[bool]:
        weights, counts = self.table(tier, wd)
        pcts = _normalize(weights)
        return [
            pcts[s] <= self.cfg.cold_pct_max and counts[s] <= self.cfg.cold_abs_max
            for s in range(SLOTS_PER_DAY)
        ]


def _group(wd: int) -> tuple[int, ...]:
    return (0, 1, 2, 3, 4) if wd <= 4 else (5, 6)


def _normalize(values: Sequence[float]) -> list[float]:
    total = sum(values)
    if total <= _EPS:
        return [0.0] * len(values)
    return [v / total for v in values]


def _active_by_weekday(state: HeatState, today: date, cfg: PlannerConfig) -> dict[int, int]:
    """Seen days per weekday within ``max(1, int(4 × coarse_tau_days))`` days before
    ``today`` (the plan's own day, not the wall clock: W19)."""
    horizon = max(1, int(cfg.coarse_tau_days * 4))
    counts: dict[int, int] = {}
    for raw in state.seen_days:
        d = date.fromisoformat(raw)
        if 0 <= (today - d).days < horizon:
            counts[d.weekday()] = counts.get(d.weekday(), 0) + 1
    return counts


# --- runs and windows ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Run:
    start: datetime
    end: datetime
    slots: int


def _runs(mask: Sequence[bool], day0: datetime, now: datetime) -> list[_Run]:
    """Maximal cold runs of today+tomorrow (24 slots, not circular), each at most 12
    slots, as local segments; a segment already over moves a week on."""
    runs: list[_Run] = []
    i = 0
    while i < len(mask):
        if not mask[i]:
            i += 1
            continue
        j = i
        while j < len(mask) and mask[j] and j - i < SLOTS_PER_DAY:
            j += 1
        start = day0 + timedelta(minutes=i * SLOT_MINUTES)
        end = day0 + timedelta(minutes=j * SLOT_MINUTES)
        if end <= now:
            start, end = start + timedelta(days=7), end + timedelta(days=7)
        runs.append(_Run(start, end, j - i))
        i = j
    return runs


def _soonest_key(run: _Run, now: datetime) -> tuple[int, float, int]:
    # Future runs first, soonest first, then the longer; runs in progress last.
    return (0 if run.start > now else 1, (run.start - now).total_seconds(), -run.slots)


def _window(
    run: _Run, now: datetime, cfg: PlannerConfig, tz: tzinfo
) -> tuple[datetime, datetime, int, str] | None:
    """The concrete window inside a cold segment: (start, end, minutes, note) or None.

    Start: the target hour when it lies in the segment early enough to leave room for
    the run (buffer + estimate), trying the segment's own day and its neighbours; else
    the segment start (fix of B7: the reference started 25 min before the end). End:
    ``buffer_minutes`` before the segment ends.
    """
    seg_start = max(run.start, now + timedelta(minutes=1)).astimezone(tz)
    seg_end = run.end.astimezone(tz)
    if seg_end <= seg_start:
        return None
    need = timedelta(minutes=cfg.buffer_minutes + cfg.run_estimate_minutes)
    latest = seg_end - need
    start = seg_start
    for shift in (0, 1, -1):
        target = datetime.combine(
            seg_start.date() + timedelta(days=shift), time(cfg.target_hour), tzinfo=tz
        )
        if seg_start <= target <= latest:
            start = target
            break
    note = ""
    if seg_end - start < need:
        note = "insufficient_free_space"
    if seg_end - start < timedelta(minutes=1):
        return None
    end = seg_end - timedelta(minutes=cfg.buffer_minutes)
    if end <= start:
        end = seg_end
    minutes = int((end - start).total_seconds() // 60)
    if minutes < 1:
        return None
    return start, end, minutes, note


def _as_plan(
    run: _Run, now: datetime, penalty: int, cfg: PlannerConfig, tz: tzinfo, **kw: Any
) -> Plan | None:
    window = _window(run, now, cfg, tz)
    if window is None:
        return None
    start, end, minutes, note = window
    return Plan(start, end, minutes, penalty=penalty, note=note, **kw)


def plan(state: HeatState, now: datetime, penalty: int, cfg: PlannerConfig, tz: tzinfo) -> Plan:
    """The next window for a target with ``penalty`` unprocessed messages (see module doc)."""
    if not state.has_history():
        return fallback_plan(now, penalty, cfg, tz, "no_history")
    local = now.astimezone(tz)
    today = local.date()
    wd = today.weekday()
    tables = _Tables(state, cfg, today, _active_by_weekday(state, today, cfg))
    day0 = datetime.combine(today, time(0), tzinfo=tz)
    runs_by_tier: dict[Tier, list[_Run]] = {}
    for tier in tables.tiers(wd):
        tomorrow = (wd + 1) % DAYS
        mask = tables.cold(tier, wd) + tables.cold(tables.neighbour(tier, tomorrow), tomorrow)
        runs_by_tier[tier] = _runs(mask, day0, now)

    want = want_slots(penalty, cfg)
    for step in range(cfg.max_relax_steps + 1):
        need = max(1, want >> step)
        for tier, runs in runs_by_tier.items():
            fitting = [r for r in runs if r.slots >= need]
            if not fitting:
                continue
            best = min(fitting, key=lambda r: _soonest_key(r, now))
            found = _as_plan(
                best, now, penalty, cfg, tz, tier=tier, relaxed_steps=step, forced=False
            )
            if found is not None:
                return found

    # Forced: the longest cold run, the soonest among equals (B6).
    for tier, runs in runs_by_tier.items():
        longest = sorted(runs, key=lambda r: (-r.slots, *_soonest_key(r, now)))
        found = _first_forced(longest, now, penalty, cfg, tz, tier)
        if found is not None:
            return found

    # Lightest: the least busy slot of the next 24 hours (W11).
    for tier in runs_by_tier:
        found = _lightest(tables, tier, now, penalty, cfg, tz)
        if found is not None:
            return found
    return fallback_plan(now, penalty, cfg, tz, "no_cold_segment")


def _lightest(
    tables: _Tables, tier: Tier, now: datetime, penalty: int, cfg: PlannerConfig, tz: tzinfo
) -> Plan | None:
    local = now.astimezone(tz)
    wd = local.weekday()
    tomorrow = (wd + 1) % DAYS
    today_pcts = _normalize(tables.table(tier, wd)[0])
    next_pcts = _normalize(tables.table(tables.neighbour(tier, tomorrow), tomorrow)[0])
    if sum(today_pcts) <= _EPS and sum(next_pcts) <= _EPS:
        return None
    day0 = datetime.combine(local.date(), time(0), tzinfo=tz)
    first = (local.hour * 60 + local.minute) // SLOT_MINUTES + 1
    candidates: list[tuple[float, _Run]] = []
    for i in range(first, first + SLOTS_PER_DAY):
        pct = today_pcts[i] if i < SLOTS_PER_DAY else next_pcts[i - SLOTS_PER_DAY]
        start = day0 + timedelta(minutes=i * SLOT_MINUTES)
        candidates.append((pct, _Run(start, start + timedelta(minutes=SLOT_MINUTES), 1)))
    lowest = min(p for p, _ in candidates)
    near = [r for p, r in candidates if p <= lowest + LIGHTEST_TIE_PCT]

    target_slot = cfg.target_hour * 60 // SLOT_MINUTES

    def to_target(run: _Run) -> tuple[int, float]:
        # Slots away from the one holding the target hour (circular), then the soonest.
        delta = abs((run.start.hour * 60 + run.start.minute) // SLOT_MINUTES - target_slot)
        return (min(delta, SLOTS_PER_DAY - delta), (run.start - now).total_seconds())

    return _first_forced(sorted(near, key=to_target), now, penalty, cfg, tz, tier)


def _first_forced(
    runs: list[_Run], now: datetime, penalty: int, cfg: PlannerConfig, tz: tzinfo, tier: Tier
) -> Plan | None:
    """The plan of the first of ``runs`` that makes one, every rule relaxed (forced)."""
    for run in runs:
        found = _as_plan(
            run, now, penalty, cfg, tz, tier=tier, relaxed_steps=cfg.max_relax_steps, forced=True
        )
        if found is not None:
            return found
    return None
