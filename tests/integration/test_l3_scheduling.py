"""L3 scheduling on the real database: per-target state, the penalty rule, back-off,
multi-target independence, and a restart on the same database."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from amrita_memory_pg.domain.consolidation import CycleSummary
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.scheduling import RUNNER_NOT_BUILT
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on

TZ = ZoneInfo("Asia/Shanghai")
T0 = datetime(2026, 3, 4, 14, 30, tzinfo=TZ)
ALICE = "QQPlatform_Private_10001"
BOB = "QQPlatform_Private_10002"
GROUP = "QQPlatform_Group_20002"
L3 = {"subconscious__enabled": True, "subconscious__target_user_id": "10001"}


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def runner(ok: bool = True, *, during: Callable[[], Any] | None = None) -> Any:
    calls: list[str] = []

    async def run(target: str) -> CycleSummary:
        calls.append(target)
        if during is not None:
            await during()
        return CycleSummary(
            cycle_id=len(calls),
            target_key=target,
            ok=ok,
            error=None if ok else "model said no",
            summary="整理完毕" if ok else None,
        )

    run.calls = calls  # type: ignore[attr-defined]
    return run


async def message(mem: Memory, personal: str, group: str | None, at: datetime) -> list[Any]:
    return await mem.scheduling.on_user_message(personal, group, at)


async def test_a_message_stores_penalty_heat_and_the_planned_run(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, **L3) as mem:
        [run] = await message(mem, ALICE, None, T0)
        assert run.target_key == ALICE
        assert run.run_at == datetime(2026, 3, 5, 3, tzinfo=TZ)  # fallback: no history before
        state = await mem.scheduling.state(ALICE)
        assert state is not None
        assert (state.penalty, state.next_run_at, state.runs) == (1, run.run_at, 0)
        assert state.heat.has_history() and state.heat.seen_days == ("2026-03-04",)
        assert state.plan is not None and state.plan["tier"] == "fallback"
        assert await mem.scheduling.context(ALICE) == {
            "last_run_end": None,
            "idle_plan": {
                "window_start": "2026-03-05 03:00",
                "window_end": "2026-03-05 05:00",
                "planned_minutes": 120,
                "tier": "fallback",
                "relaxed_steps": 0,
                "forced": True,
                "note": "no_history",
            },
            "penalty": 1,
            "next_run_at": run.run_at.isoformat(),
        }
        # Someone else's message in a private chat concerns no target.
        assert await message(mem, BOB, None, T0) == []
        assert await mem.scheduling.state(BOB) is None


async def test_success_resets_the_penalty_it_ran_for_failure_keeps_it_d5_b3(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, **L3) as mem:
        clock = Clock(T0)
        mem.scheduling.clock = clock
        for minutes in (0, 20, 40):
            await message(mem, ALICE, None, T0 + timedelta(minutes=minutes))
        clock.now = T0 + timedelta(hours=1)

        mem.scheduling.runner = runner(ok=False)
        summary, nxt = await mem.scheduling.run_cycle(ALICE)
        state = await mem.scheduling.state(ALICE)
        assert state is not None and not summary.ok and nxt is not None
        assert (state.penalty, state.runs, state.failures, state.failures_in_row) == (3, 1, 1, 1)
        assert state.last_error == "model said no" and state.last_failure_at == clock.now
        assert state.next_run_at == nxt.run_at > clock.now  # W17: rescheduled after a failure

        # B3: an invalid (failed) cycle does not poison the next one.
        async def chat_meanwhile() -> None:
            await message(mem, ALICE, None, T0 + timedelta(hours=2))

        mem.scheduling.runner = runner(ok=True, during=chat_meanwhile)
        clock.now = T0 + timedelta(hours=3)
        summary, nxt = await mem.scheduling.run_cycle(ALICE)
        state = await mem.scheduling.state(ALICE)
        assert state is not None and summary.ok and nxt is not None
        # The 3 messages it ran for are cleared; the one during the cycle still counts.
        assert (state.penalty, state.runs, state.failures, state.failures_in_row) == (1, 2, 1, 0)
        assert state.last_summary == "整理完毕" and state.last_error is None
        assert state.last_run_end == state.last_success_at == clock.now
        assert state.next_run_at == nxt.run_at


async def test_a_crashing_runner_is_a_failed_cycle_and_no_runner_says_so(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, **L3) as mem:
        mem.scheduling.clock = Clock(T0)
        await message(mem, ALICE, None, T0)
        # Wired by Memory: the loop's runner, which fails without a model, saying so.
        summary, nxt = await mem.scheduling.run_cycle(ALICE)
        assert not summary.ok and "no model configured" in (summary.error or "")
        mem.scheduling.runner = None  # the stand-in an integration uses without a loop
        summary, nxt = await mem.scheduling.run_cycle(ALICE)
        assert (summary.ok, summary.error) == (False, RUNNER_NOT_BUILT)

        async def crash(target: str) -> CycleSummary:
            raise RuntimeError("boom")

        mem.scheduling.runner = crash
        summary, nxt = await mem.scheduling.run_cycle(ALICE)
        state = await mem.scheduling.state(ALICE)
        assert (summary.ok, summary.error) == (False, "boom")
        assert state is not None and (state.penalty, state.failures_in_row) == (1, 3)
        assert nxt is not None and state.next_run_at == nxt.run_at


async def test_w10_the_loops_own_run_is_not_user_activity(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, **L3) as mem:
        mem.scheduling.clock = Clock(T0 + timedelta(hours=12))
        await message(mem, ALICE, None, T0)
        before = await mem.scheduling.state(ALICE)
        mem.scheduling.runner = runner()
        await mem.scheduling.run_cycle(ALICE)
        after = await mem.scheduling.state(ALICE)
        assert before is not None and after is not None and after.heat == before.heat


async def test_planner_off_uses_the_fixed_back_off(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(
        db_dsn, tmp_path, **L3, subconscious__use_idle_window_planner=False
    ) as mem:
        clock = Clock(T0)
        mem.scheduling.clock = clock
        got = []
        for i in range(3):
            [run] = await message(mem, ALICE, None, T0 + timedelta(minutes=i))
            got.append((run.run_at - (T0 + timedelta(minutes=i))).total_seconds())
        assert got == [1800, 2700, 4050]
        state = await mem.scheduling.state(ALICE)
        assert state is not None and state.plan is None
        mem.scheduling.runner = runner(ok=False)
        _, nxt = await mem.scheduling.run_cycle(ALICE)
        assert nxt is not None and nxt.run_at - clock.now == timedelta(minutes=30)
        mem.scheduling.runner = runner(ok=True)
        _, nxt = await mem.scheduling.run_cycle(ALICE)
        assert nxt is not None and nxt.run_at - clock.now == timedelta(hours=24)


async def test_targets_are_independent(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, **L3, subconscious__targets=[GROUP, BOB]) as mem:
        assert mem.scheduling.targets == (ALICE, GROUP, BOB)
        mem.scheduling.clock = Clock(T0)
        # Alice in the group: her personal target and the group's.
        runs = await message(mem, ALICE, GROUP, T0)
        assert sorted(r.target_key for r in runs) == sorted([ALICE, GROUP])
        # Carol in the group: only the group.
        runs = await message(mem, "QQPlatform_Private_3", GROUP, T0 + timedelta(minutes=30))
        assert [r.target_key for r in runs] == [GROUP]
        mem.scheduling.runner = runner()
        await mem.scheduling.run_cycle(GROUP)
        states = {
            s.target_key: s for s in await mem.scheduling.repo.get_many(mem.scheduling.targets)
        }
        assert set(states) == {ALICE, GROUP}
        assert (states[ALICE].penalty, states[ALICE].runs) == (1, 0)
        assert (states[GROUP].penalty, states[GROUP].runs) == (0, 1)


async def test_the_first_message_seeds_the_heatmap_from_recorded_activity(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, **L3) as mem:
        for day in range(14):
            for hour in range(9, 24):
                await mem.activity.record_user_message(
                    session_key=ALICE,
                    user_key=ALICE,
                    user_id="10001",
                    group_id=None,
                    text="hi",
                    now=T0 - timedelta(days=day + 1) + timedelta(hours=hour - 14),
                )
        [run] = await message(mem, ALICE, None, T0)
        assert run.decision.plan is not None
        assert run.decision.plan.tier == "coarse" and not run.decision.plan.forced
        assert run.run_at == datetime(2026, 3, 5, 3, tzinfo=TZ)
        state = await mem.scheduling.state(ALICE)
        assert (
            state is not None and sum(state.heat.coarse) == 14 * 15 + 0
        )  # the hit is counted once


async def test_state_survives_a_restart(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, **L3) as mem:
        mem.scheduling.clock = Clock(T0)
        for minutes in (0, 30):
            [run] = await message(mem, ALICE, None, T0 + timedelta(minutes=minutes))
        before = await mem.scheduling.state(ALICE)
    async with memory_on(db_dsn, tmp_path, **L3) as mem:
        after = await mem.scheduling.state(ALICE)
        assert before is not None and after is not None
        assert (after.penalty, after.heat, after.next_run_at, after.plan) == (
            2,
            before.heat,
            run.run_at,
            before.plan,
        )
        [restored] = await mem.scheduling.restore(T0 + timedelta(hours=1))
        assert (restored.target_key, restored.run_at, restored.decision.reason) == (
            ALICE,
            run.run_at,
            "kept",
        )
        # Reopened after the window had passed: a new window is planned and stored.
        [late] = await mem.scheduling.restore(datetime(2026, 3, 5, 14, tzinfo=TZ))
        assert late.decision.reason == "replanned" and late.run_at > run.run_at
        stored = await mem.scheduling.state(ALICE)
        assert stored is not None and stored.next_run_at == late.run_at


async def test_disabled_l3_has_no_targets(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, subconscious__target_user_id="10001") as mem:
        assert mem.scheduling.targets == () and not mem.scheduling.enabled
        assert await message(mem, ALICE, None, T0) == []
        assert await mem.scheduling.restore(T0) == []


def test_tool_context_keys_are_the_target_keys() -> None:
    ctx = ToolContext(platform="qq", user_id="10001", group_id="20002")
    assert (ctx.personal_key, ctx.group_key) == (ALICE, GROUP)


async def test_the_hooks_own_count_of_the_first_message_is_not_history(
    db_dsn: str, tmp_path: Path
) -> None:
    """The chat hook counts a message in activity_heatmap before the scheduler sees it;
    a target's very first message still plans the no-history fallback."""
    async with memory_on(db_dsn, tmp_path, **L3) as mem:
        await mem.activity.record_user_message(
            session_key=ALICE, user_key=ALICE, user_id="10001", group_id=None, text="hi", now=T0
        )
        [run] = await message(mem, ALICE, None, T0)
        assert run.decision.plan is not None and run.decision.plan.note == "no_history"
