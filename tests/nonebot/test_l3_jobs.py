"""The L3 cycle jobs on the plugin's APScheduler: a target's message (re)schedules its job
at the stored next run; a due job calls the runner and schedules the next run; start-up
restores the jobs from the database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from nonebug import App

from amrita_memory_pg.domain.consolidation import CycleSummary
from amrita_memory_pg.services.scheduling import SchedulingService
from amrita_memory_pg.storage.l3_state import L3StateStore
from tests.nonebot.support import qq_bot, qq_group, qq_private

ALICE = "QQPlatform_Private_10001"
GROUP = "QQPlatform_Group_20002"


class Runner:
    """A small cycle runner: records the targets it ran for."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.ran = asyncio.Event()

    async def __call__(self, target: str) -> CycleSummary:
        self.calls.append(target)
        self.ran.set()
        return CycleSummary(cycle_id=len(self.calls), target_key=target, ok=True, summary="ok")


@pytest.fixture
async def l3(nonebug_init: None) -> AsyncIterator[tuple[Any, Runner]]:
    """The plugin's memory with L3 on for Alice and group 20002, and a small runner."""
    from nonebot_plugin_apscheduler import scheduler

    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime, start_l3

    memory = runtime.require()
    await memory.database.pool.execute("TRUNCATE amrita_memory.l3_state")
    sub = memory.settings.subconscious.model_copy(
        update={"enabled": True, "target_user_id": "10001", "targets": [GROUP]}
    )
    settings = memory.settings.model_copy(update={"subconscious": sub})
    runner = Runner()
    original = memory.scheduling
    memory.scheduling = SchedulingService(
        L3StateStore(memory.database.pool, tz_name="Asia/Shanghai"),
        memory.activity,
        settings,
        runner=runner,
    )
    await start_l3(memory)
    try:
        yield runtime, runner
    finally:
        if runtime.l3_jobs is not None:
            runtime.l3_jobs.remove_all()
        runtime.l3_jobs = None
        memory.scheduling = original
        assert not [j for j in scheduler.get_jobs() if j.id.startswith("amrita_memory_l3_")]


async def test_a_target_message_schedules_its_job_at_the_stored_next_run(
    app: App, l3: tuple[Any, Runner]
) -> None:
    runtime, _ = l3
    jobs = runtime.l3_jobs
    assert jobs is not None and jobs.next_run(ALICE) is None
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        ctx.receive_event(bot, qq_private("在吗", user_id=10001, to_me=False))
        ctx.receive_event(bot, qq_private("hi", user_id=10002, to_me=False))
    state = await runtime.memory.scheduling.state(ALICE)
    assert state is not None and state.penalty == 1
    assert jobs.next_run(ALICE) == state.next_run_at > datetime.now(UTC)
    assert jobs.next_run("QQPlatform_Private_10002") is None
    assert jobs.next_run(GROUP) is None

    # Bob in the group moves only the group's job; Alice in the group moves both.
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        ctx.receive_event(bot, qq_group("hello", user_id=10002))
    group = await runtime.memory.scheduling.state(GROUP)
    assert group is not None and jobs.next_run(GROUP) == group.next_run_at
    alice = await runtime.memory.scheduling.state(ALICE)
    assert alice is not None and alice.penalty == 1


async def test_a_due_job_runs_the_cycle_and_schedules_the_next(
    app: App, l3: tuple[Any, Runner]
) -> None:
    from nonebot_plugin_apscheduler import scheduler

    runtime, runner = l3
    async with app.test_matcher() as ctx:
        ctx.receive_event(qq_bot(ctx), qq_private("在吗", user_id=10001, to_me=False))
    job = scheduler.get_job("amrita_memory_l3_" + ALICE)
    assert job is not None
    job.modify(next_run_time=datetime.now(UTC) + timedelta(milliseconds=100))
    scheduler.wakeup()
    await asyncio.wait_for(runner.ran.wait(), timeout=20)
    state = None
    for _ in range(100):  # the job finishes its bookkeeping after the runner returns
        state = await runtime.memory.scheduling.state(ALICE)
        if state is not None and state.runs == 1 and runtime.l3_jobs.next_run(ALICE):
            break
        await asyncio.sleep(0.1)
    assert runner.calls == [ALICE]
    assert state is not None and (state.runs, state.penalty, state.failures) == (1, 0, 0)
    assert runtime.l3_jobs.next_run(ALICE) == state.next_run_at > datetime.now(UTC)


async def test_start_up_restores_the_jobs_from_the_database(
    app: App, l3: tuple[Any, Runner]
) -> None:
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import start_l3

    runtime, _ = l3
    async with app.test_matcher() as ctx:
        ctx.receive_event(qq_bot(ctx), qq_private("在吗", user_id=10001, to_me=False))
    stored = await runtime.memory.scheduling.state(ALICE)
    assert stored is not None and stored.next_run_at is not None
    runtime.l3_jobs.remove_all()  # what shutdown does
    assert runtime.l3_jobs.next_run(ALICE) is None
    await start_l3(runtime.memory)  # what the next start-up does
    assert runtime.l3_jobs.next_run(ALICE) == stored.next_run_at
