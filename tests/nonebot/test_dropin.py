"""The drop-in under NoneBot (nonebug, a real OneBot v11 bot): the L3 loop's proactive
message goes out at once as a QQ private message through the plugin's sender; a failed
send is kept and goes out on the target's next private message, once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from nonebug import App

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing_llm import ScriptedLLM
from tests.nonebot.support import qq_bot, qq_private
from tests.support.memory import settings_for

TARGET = "QQPlatform_Private_10001"


@pytest.fixture
async def l3_memory(
    nonebug_init: None, nb_db_dsn: str, llm_stub: ScriptedLLM, tmp_path: Path
) -> AsyncIterator[Memory]:
    """A Memory with the L3 loop on (sending allowed), as a bot process with L3 has it,
    sending through the plugin's NoneBot sender."""
    from amrita_memory_pg.integrations.nonebot.send import send_private

    settings = settings_for(
        nb_db_dsn,
        tmp_path / "data",
        subconscious__enabled=True,
        subconscious__target_user_id="10001",
        subconscious__allow_send_to_user=True,
        subconscious__prompt_dir=str(tmp_path / "prompts"),
        llm__base_url=llm_stub.base_url,
        llm__model="stub-model",
    )
    async with open_memory(settings) as mem:
        await mem.pool.execute(
            "TRUNCATE amrita_memory.pending_message, amrita_memory.consolidation_cycle CASCADE"
        )
        mem.private_send = send_private
        yield mem


def script_send(llm: ScriptedLLM, text: str) -> None:
    llm.call("subconscious_send_to_user", {"intent": "问候"})
    llm.say(text)  # the message's generation
    llm.call("subconscious_iter_stop", {"summary": "问候了用户"})


async def sent_rows(mem: Memory) -> list[dict[str, Any]]:
    rows = await mem.pool.fetch(
        "SELECT content, delivered_at IS NOT NULL AS delivered, attempts, last_error "
        "FROM amrita_memory.pending_message ORDER BY id"
    )
    return [dict(r) for r in rows]


async def test_the_loop_sends_its_message_as_a_private_message_at_once(
    app: App, l3_memory: Memory, llm_stub: ScriptedLLM
) -> None:
    script_send(llm_stub, "早安呀，今天也要加油")
    async with app.test_api() as ctx:
        qq_bot(ctx)
        ctx.should_call_api(
            "send_private_msg",
            {"user_id": 10001, "message": "早安呀，今天也要加油"},
            result={"message_id": 7},
        )
        summary = await l3_memory.run_cycle(TARGET)
    assert summary.ok, summary.error
    assert await sent_rows(l3_memory) == [
        {"content": "早安呀，今天也要加油", "delivered": True, "attempts": 1, "last_error": None}
    ]


async def test_a_failed_send_goes_out_on_the_targets_next_private_message_once(
    app: App, l3_memory: Memory, llm_stub: ScriptedLLM
) -> None:
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    script_send(llm_stub, "最近还好吗？")
    async with app.test_api() as ctx:
        qq_bot(ctx)
        ctx.should_call_api(
            "send_private_msg",
            {"user_id": 10001, "message": "最近还好吗？"},
            exception=RuntimeError("QQ 风控"),
        )
        assert (await l3_memory.run_cycle(TARGET)).ok
    [row] = await sent_rows(l3_memory)
    assert (row["delivered"], row["attempts"], row["last_error"]) == (False, 1, "QQ 风控")

    plugin_memory = runtime.memory
    runtime.memory = l3_memory  # this bot process runs the L3 loop
    try:
        async with app.test_matcher() as ctx:
            bot = qq_bot(ctx)
            event = qq_private("在吗", user_id=10001, to_me=False)
            ctx.receive_event(bot, event)
            ctx.should_call_send(event, "最近还好吗？", result={"message_id": 8})
        async with app.test_matcher() as ctx:  # once: nothing is sent again
            bot = qq_bot(ctx)
            ctx.receive_event(bot, qq_private("还在吗", user_id=10001, to_me=False))
    finally:
        runtime.memory = plugin_memory
    [row] = await sent_rows(l3_memory)
    assert (row["delivered"], row["attempts"]) == (True, 2)


async def test_a_private_message_of_the_target_aborts_its_running_cycle(
    app: App, l3_memory: Memory, llm_stub: ScriptedLLM
) -> None:
    """Through the plugin's message hook (plain NoneBot: every message of the target
    counts): the running cycle stops at its next tool-call boundary."""
    from nonebot_plugin_apscheduler import scheduler

    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime
    from amrita_memory_pg.integrations.nonebot.jobs import L3Jobs

    await l3_memory.pool.execute("TRUNCATE amrita_memory.l3_state")
    llm_stub.call("subconscious_get_memory_stats", {})
    llm_stub.call("subconscious_iter_stop", {"summary": "不该到这里"})
    llm_stub.delay_seconds = 0.5
    plugin_memory = runtime.memory
    runtime.memory = l3_memory
    runtime.l3_jobs = L3Jobs(scheduler, l3_memory.scheduling)
    try:
        task = asyncio.create_task(l3_memory.run_cycle_and_plan(TARGET))
        for _ in range(200):
            if len(llm_stub.requests) >= 2:
                break
            await asyncio.sleep(0.02)
        async with app.test_matcher() as ctx:
            ctx.receive_event(qq_bot(ctx), qq_private("在吗", user_id=10001, to_me=False))
        summary, after = await task
    finally:
        llm_stub.delay_seconds = 0
        runtime.l3_jobs.remove_all()
        runtime.l3_jobs = None
        runtime.memory = plugin_memory
    assert summary.aborted and summary.iterations == 2
    state = await l3_memory.scheduling.state(TARGET)
    assert state is not None and (state.penalty, state.runs) == (1, 0)
    assert after is not None and after.run_at == state.next_run_at


async def test_under_amritabot_messages_do_not_count_completions_do(
    app: App, l3_memory: Memory
) -> None:
    """With AmritaBot installed the trigger is its pre-completion hook: the NoneBot
    message hook logs the message but no longer bumps the penalty."""
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    await l3_memory.pool.execute("TRUNCATE amrita_memory.l3_state")
    plugin_memory = runtime.memory
    runtime.memory = l3_memory
    runtime.l3_counts_completions = True
    try:
        async with app.test_matcher() as ctx:
            ctx.receive_event(qq_bot(ctx), qq_private("在吗", user_id=10001, to_me=False))
    finally:
        runtime.l3_counts_completions = False
        runtime.memory = plugin_memory
    assert await l3_memory.scheduling.state(TARGET) is None
    lines = await l3_memory.activity.recent(TARGET, 5)
    assert [line.text for line in lines] == ["在吗"]
