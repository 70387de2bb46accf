"""When L3 cycles run, per target: the core of the scheduler (reference §8.2–8.3, §8.7).

The decisions are pure (:mod:`amrita_memory_pg.domain.scheduling`); this service reads
and writes each target's ``l3_state`` row around them, calls the cycle runner, and
returns what to schedule as :class:`ScheduledRun` values. It never touches a job
scheduler: the integration (``integrations/nonebot/jobs.py``) turns a ``ScheduledRun``
into one APScheduler date job per target, so the same core works for a CLI or a test.

The runner is injectable (constructor argument or the ``runner`` attribute), so the
L3 loop plugs in its ``run_cycle`` without this module knowing it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from amrita_memory_pg.domain.activity import resolve_timezone
from amrita_memory_pg.domain.consolidation import CycleRunner, CycleSummary
from amrita_memory_pg.domain.errors import LeaseHeld
from amrita_memory_pg.domain.planner import HeatState, PlannerConfig, log_line, observe
from amrita_memory_pg.domain.redact import redact
from amrita_memory_pg.domain.scheduling import (
    Decision,
    ScheduleRules,
    TargetState,
    after_cycle,
    after_message,
    after_restart,
)
from amrita_memory_pg.services.leases import Leases
from amrita_memory_pg.settings import Settings, SubconsciousSettings
from amrita_memory_pg.storage.activity import ActivityRepository
from amrita_memory_pg.storage.l3_state import L3StateStore

log = logging.getLogger(__name__)

RUNNER_NOT_BUILT = "L3 runner not built yet"


def _utcnow() -> datetime:
    return datetime.now(UTC)


def schedule_rules(sub: SubconsciousSettings) -> ScheduleRules:
    """The ``[subconscious]`` scheduling keys as the pure rules take them."""
    tz = resolve_timezone(sub.idle_timezone)
    return ScheduleRules(
        tz=tz,
        tz_name=str(tz),
        use_planner=sub.use_idle_window_planner,
        planner=PlannerConfig(
            fine_tau_days=sub.idle_fine_tau_days,
            coarse_tau_days=sub.idle_coarse_tau_days,
            shrink_k=sub.idle_shrink_k,
            min_sample_days_fine=sub.idle_min_sample_days_fine,
            min_sample_days_mid=sub.idle_min_sample_days_mid,
            cold_pct_max=sub.idle_cold_pct_max,
            cold_abs_max=sub.idle_cold_abs_max,
            target_hour=sub.idle_target_hour,
            base_slots=sub.idle_base_slots,
            max_slots=sub.idle_max_slots,
            penalty_multiplier=sub.idle_penalty_multiplier,
            max_relax_steps=sub.idle_max_relax_steps,
            buffer_minutes=sub.idle_buffer_minutes,
            run_estimate_minutes=sub.idle_run_estimate_minutes,
            fallback_minutes=sub.idle_fallback_minutes,
            noise_gap_minutes=sub.idle_noise_gap_minutes,
        ),
        base_delay_minutes=sub.rethink_base_delay_minutes,
        delay_multiplier=sub.rethink_penalty_multiplier,
        max_delay_minutes=sub.rethink_max_delay_minutes,
    )


async def runner_not_built(target_key: str) -> CycleSummary:
    """The stand-in runner until the L3 loop is wired: every cycle fails, saying why."""
    return CycleSummary(cycle_id=0, target_key=target_key, ok=False, error=RUNNER_NOT_BUILT)


@dataclass(frozen=True, slots=True)
class ScheduledRun:
    """Run ``target_key``'s next cycle at ``decision.run_at``."""

    target_key: str
    decision: Decision

    @property
    def run_at(self) -> datetime:
        return self.decision.run_at


class SchedulingService:
    """Targets, their state, and the runs to schedule for them."""

    def __init__(
        self,
        state: L3StateStore,
        activity: ActivityRepository,
        settings: Settings,
        *,
        runner: CycleRunner | None = None,
        clock: Callable[[], datetime] = _utcnow,
        leases: Leases | None = None,
    ) -> None:
        sub = settings.subconscious
        self.repo = state
        self.activity = activity
        self.rules = schedule_rules(sub)
        #: every target partition key, ``target_user_id``'s first; empty when L3 is off
        self.targets: tuple[str, ...] = sub.target_keys() if sub.enabled else ()
        #: what a due run calls; the L3 loop sets it (None: nothing to run yet)
        self.runner: CycleRunner | None = runner
        self.clock = clock
        #: the fleet's leases: one cycle per target across every process;
        #: None (a test's bare service): only this process's guard
        self.leases = leases
        self._running: set[str] = set()

    @property
    def enabled(self) -> bool:
        return bool(self.targets)

    def targets_for(self, personal_key: str, group_key: str | None) -> tuple[str, ...]:
        """The targets a message concerns: its speaker's personal partition (in any chat)
        and the group it was said in."""
        return tuple(t for t in self.targets if t in (personal_key, group_key))

    async def on_user_message(
        self, personal_key: str, group_key: str | None, now: datetime | None = None
    ) -> list[ScheduledRun]:
        """Observe the message in each concerned target's heatmap, bump its penalty and
        plan its next run (stored in the same transaction)."""
        moment = now or self.clock()
        runs = []
        for target in self.targets_for(personal_key, group_key):
            async with self.repo.locked(target, moment) as row:
                heat = await self._heat(row.state, moment)
                had_history = heat.has_history()
                heat, _counted = observe(heat, moment, self.rules.planner, self.rules.tz)
                penalty = row.state.penalty + 1
                decision = after_message(heat, penalty, moment, self.rules, had_history=had_history)
                await row.record_message(heat, decision.run_at, decision.plan_dict(), moment)
            self._log(target, penalty, decision)
            runs.append(ScheduledRun(target, decision))
        return runs

    async def _heat(self, state: TargetState, moment: datetime) -> HeatState:
        """The target's layers; on its first message, seeded from the raw
        ``activity_heatmap`` counts the chat hooks kept before L3 was on. Those counts
        already include this message, so it is marked as counted (a burst anchor); a
        grid holding only this message is no history (the first message of a new
        target plans the fallback window, as in the reference)."""
        heat = state.heat
        if heat.last_update > 0:
            return heat
        grid = await self.activity.heatmap(state.target_key)
        if sum(map(sum, grid)) <= 1:  # nothing but (at most) this message: no history yet
            return HeatState(tz_name=self.rules.tz_name)
        seeded = HeatState.from_counts(grid, self.rules.tz_name)
        ts = moment.timestamp()
        return HeatState(
            fine=seeded.fine,
            coarse=seeded.coarse,
            last_update=ts,
            last_counted=ts,
            tz_name=self.rules.tz_name,
        )

    async def run_cycle(
        self, target_key: str, runner: CycleRunner | None = None
    ) -> tuple[CycleSummary, ScheduledRun | None]:
        """Run one cycle now and plan the next run, success or failure (W17).

        A target already running in this process is not started twice (the second call
        gets a failed summary and no new run: the running one plans it). A runner that
        raises counts as a failed cycle. ``runner`` overrides :attr:`runner` for this
        cycle (``/memory dmn`` records its cycle as manual, not scheduled).
        """
        if target_key in self._running:
            busy = CycleSummary(
                cycle_id=0, target_key=target_key, ok=False, error="already running"
            )
            return busy, None
        self._running.add(target_key)
        try:
            async with self._lease(target_key):
                async with self.repo.locked(target_key, self.clock()) as row:
                    await row.start_cycle(self.clock())
                summary = await self._call_runner(target_key, runner)
                end = self.clock()
                if summary.aborted:
                    return summary, await self._aborted(target_key, end)
                async with self.repo.locked(target_key, end) as row:
                    state = await row.finish_cycle(
                        ok=summary.ok,
                        error=summary.error,
                        summary=summary.summary,
                        now=end,
                        tz_name=self.rules.tz_name,
                    )
                    decision = after_cycle(
                        summary.ok,
                        state.penalty,
                        state.failures_in_row,
                        state.heat,
                        end,
                        self.rules,
                    )
                    await row.set_next(decision.run_at, decision.plan_dict(), end)
        except LeaseHeld as held:
            return await self._held(target_key, held)
        finally:
            self._running.discard(target_key)
        if summary.ok:
            log.info("[Subconscious] Cycle done for %s (runs=%d)", target_key, state.runs)
        else:
            log.warning("[Subconscious] Cycle failed for %s: %s", target_key, summary.error)
        self._log(target_key, state.penalty, decision)
        return summary, ScheduledRun(target_key, decision)

    def _lease(self, target_key: str) -> contextlib.AbstractAsyncContextManager[Any]:
        if self.leases is None:
            return contextlib.nullcontext()
        return self.leases.hold("l3", target_key)

    async def _held(self, target_key: str, held: LeaseHeld) -> tuple[CycleSummary, ScheduledRun]:
        """Another process runs this target's cycle now: leave the stored state to it
        (its end plans the stored next run) and plan this process's next window as after
        a successful cycle ending now."""
        now = self.clock()
        state = await self.repo.get(target_key)
        heat = state.heat if state is not None else HeatState(tz_name=self.rules.tz_name)
        penalty = state.penalty if state is not None else 0
        planned = after_cycle(True, penalty, 0, heat, now, self.rules)
        decision = Decision(planned.run_at, planned.plan, "held_elsewhere")
        log.info(
            "[Subconscious] cycle for %s held by %s; next window at %s",
            target_key,
            held.owner,
            decision.run_at.isoformat(),
        )
        summary = CycleSummary(
            cycle_id=0,
            target_key=target_key,
            ok=False,
            error=f"held by {held.owner}",
            held_by=held.owner,
        )
        return summary, ScheduledRun(target_key, decision)

    async def _aborted(self, target_key: str, end: datetime) -> ScheduledRun | None:
        """The cycle gave way to the target's message (reference §8.3): no run counted,
        the penalty as the message left it, and the next run the one that message
        planned (re-planned only if it is already due)."""
        async with self.repo.locked(target_key, end) as row:
            state = await row.abort_cycle(end)
            decision = after_restart(state, end, self.rules)
            if decision is not None and decision.reason != "kept":
                await row.set_next(decision.run_at, decision.plan_dict(), end)
        log.info("[Subconscious] Cycle aborted by new user message (target %s)", target_key)
        return None if decision is None else ScheduledRun(target_key, decision)

    async def interrupted(self, target_key: str) -> bool:
        """Whether the target spoke since its running cycle started (any process)."""
        return await self.repo.spoke_during_cycle(target_key)

    async def _call_runner(
        self, target_key: str, runner: CycleRunner | None = None
    ) -> CycleSummary:
        runner = runner or self.runner or runner_not_built
        try:
            return await runner(target_key)
        except Exception as exc:  # the runner's boundary: a crash is a failed cycle
            log.exception("L3 runner crashed for %s", target_key)
            return CycleSummary(
                cycle_id=0,
                target_key=target_key,
                ok=False,
                error=redact(str(exc) or type(exc).__name__),
            )

    async def restore(self, now: datetime | None = None) -> list[ScheduledRun]:
        """The runs to schedule at start-up, from the stored state (W17): a stored run
        still ahead is kept; a missed one runs in a minute while its window is open,
        else a new window is planned."""
        moment = now or self.clock()
        runs = []
        for state in await self.repo.get_many(self.targets):
            decision = after_restart(state, moment, self.rules)
            if decision is None:
                continue
            if decision.reason != "kept":
                async with self.repo.locked(state.target_key, moment) as row:
                    await row.set_next(decision.run_at, decision.plan_dict(), moment)
            log.info(
                "[Subconscious] restored %s: %s at %s",
                state.target_key,
                decision.reason,
                decision.run_at.isoformat(),
            )
            runs.append(ScheduledRun(state.target_key, decision))
        return runs

    async def state(self, target_key: str) -> TargetState | None:
        """A target's stored state (None before its first message or cycle)."""
        return await self.repo.get(target_key)

    async def context(self, target_key: str) -> dict[str, Any]:
        """What ``subconscious_get_context`` shows about scheduling: the last run's end
        (ISO in ``idle_timezone``, None if never), the planned window (§9.8 ``idle_plan``), the penalty."""
        state = await self.repo.get(target_key)
        if state is None:
            return {"last_run_end": None, "idle_plan": None, "penalty": 0, "next_run_at": None}
        return {
            "last_run_end": self._local(state.last_run_end),
            "idle_plan": state.idle_plan(),
            "penalty": state.penalty,
            "next_run_at": self._local(state.next_run_at),
        }

    def _local(self, moment: datetime | None) -> str | None:
        """ISO time in the planner's zone (the zone the plan's window is shown in)."""
        return moment.astimezone(self.rules.tz).isoformat() if moment else None

    def _log(self, target: str, penalty: int, decision: Decision) -> None:
        if decision.plan is not None:
            log.info(
                "%s (target %s, %s)", log_line(penalty, decision.plan), target, decision.reason
            )
            return
        delay = (decision.run_at - self.clock()).total_seconds() / 60
        log.info(
            "[Subconscious] Rescheduled(legacy): penalty=#%d, delay=%.0fmin (cap=%.0fmin) "
            "(target %s, %s)",
            penalty,
            delay,
            self.rules.max_delay_minutes,
            target,
            decision.reason,
        )
