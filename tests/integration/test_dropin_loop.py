"""The L3 loop as a drop-in for amrita_plugin_memory's users — a message of the
target aborts its running cycle (from another process's Memory), the persona reaches the
prompt, and the host's model is what a cycle calls. Real PostgreSQL, a scripted
OpenAI-compatible model over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.testing_llm import ScriptedLLM
from tests.support.l3 import TARGET, USAGE, add, cycle_row, loop_memory, tool_replies


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


async def _wait_for_requests(llm: ScriptedLLM, n: int) -> None:
    for _ in range(200):
        if len(llm.requests) >= n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the model got {len(llm.requests)} requests, expected {n}")


async def test_a_message_from_another_process_aborts_the_running_cycle_at_the_next_boundary(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """Reference §8.3 step 3: the user comes first. The message is handled by a second
    Memory on the same database (another bot process); the cycle sees it in PostgreSQL
    before its next tool call, stops there, keeps what it did and spent, counts no run,
    keeps the penalty the message set and the run the message planned."""
    async with (
        loop_memory(db_dsn, tmp_path, llm) as mem,
        loop_memory(db_dsn, tmp_path / "other", llm) as other_process,
    ):
        first = await add(mem, "用户喜欢跑步")
        second = await add(mem, "用户住在上海")
        await mem.scheduling.on_user_message(TARGET, None, datetime.now(UTC))
        before = await mem.scheduling.state(TARGET)
        assert before is not None and before.penalty == 1
        llm.call("subconscious_update_memory", {"id": first, "tags": "运动"})
        llm.call("subconscious_delete_memory", {"id": second})
        llm.call("subconscious_iter_stop", {"summary": "不该到这里"})
        llm.delay_seconds = 0.4  # the second model call is slow: the user speaks meanwhile

        task = asyncio.create_task(mem.run_cycle_and_plan(TARGET))
        await _wait_for_requests(llm, 2)
        [planned] = await other_process.scheduling.on_user_message(TARGET, None, datetime.now(UTC))
        summary, after = await task

        assert summary.aborted and not summary.ok
        assert summary.error is not None and summary.error.startswith("aborted")
        # the first turn's call ran; the second turn's delete did not
        record = await mem.memories.get(TARGET, first)
        assert record is not None and record.tags == ("运动",)
        assert await mem.memories.get(TARGET, second) is not None
        # both model calls were spent and recorded
        assert (summary.iterations, summary.prompt_tokens) == (2, 200)
        row = await cycle_row(mem, summary.cycle_id)
        assert row["ok"] is False and row["ended_at"] is not None and row["prompt_tokens"] == 200
        state = await mem.scheduling.state(TARGET)
        assert state is not None
        assert (state.penalty, state.runs, state.failures) == (2, before.runs, before.failures)
        assert state.running_since is None
        # the next run is the one the message planned, in this process's job too
        assert after is not None and after.run_at == planned.run_at == state.next_run_at
        assert len(llm.requests) == 2  # nothing after the abort


async def test_a_cycle_nobody_interrupts_is_not_aborted(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        await mem.scheduling.on_user_message(TARGET, None, datetime.now(UTC))
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        summary, _ = await mem.run_cycle_and_plan(TARGET)
        assert summary.ok and not summary.aborted
        state = await mem.scheduling.state(TARGET)
        assert state is not None and state.penalty == 0 and state.runs == 1
        assert not await mem.scheduling.interrupted(TARGET)  # no cycle running


async def test_the_configured_persona_is_in_the_cycle_prompt_and_a_file_is_reread(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    persona = tmp_path / "persona.txt"
    persona.write_text("你是小橘，一只爱吃鱼的猫娘。\n", encoding="utf-8")
    async with loop_memory(
        db_dsn, tmp_path, llm, subconscious__character_prompt_file=str(persona)
    ) as mem:
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        assert (await mem.run_cycle(TARGET)).ok
        system = llm.requests[0]["messages"][0]["content"]
        assert "你是小橘，一只爱吃鱼的猫娘。" in system
        persona.write_text("你是大橘。", encoding="utf-8")  # an edit needs no restart
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        assert (await mem.run_cycle(TARGET)).ok
        assert "你是大橘。" in llm.requests[1]["messages"][0]["content"]
    async with loop_memory(
        db_dsn, tmp_path, llm, subconscious__character_prompt="你是阿黄。"
    ) as mem:
        mem.prompts.host_persona = lambda: "宿主人设"  # the setting wins over the host
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        assert (await mem.run_cycle(TARGET)).ok
        system = llm.requests[2]["messages"][0]["content"]
        assert "你是阿黄。" in system and "宿主人设" not in system


class Host:
    """The host's private send (what NoneBot's send_private_msg is to the plugin)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.failing: str | None = None

    async def __call__(self, target_key: str, text: str) -> None:
        if self.failing:
            raise RuntimeError(self.failing)
        self.sent.append((target_key, text))


async def _pending(mem: Any) -> list[dict[str, Any]]:
    rows = await mem.pool.fetch(
        "SELECT content, delivered_at, attempts, last_error FROM amrita_memory.pending_message"
    )
    return [dict(r) for r in rows]


async def test_a_proactive_message_is_sent_once_when_the_loop_decides(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__allow_send_to_user=True) as mem:
        host = Host()
        mem.private_send = host
        llm.call("subconscious_send_to_user", {"intent": "问候"})
        llm.say("早安呀，今天也要加油")  # the message's own generation call
        llm.call("subconscious_iter_stop", {"summary": "问候了用户"})
        summary = await mem.run_cycle(TARGET)
        assert summary.ok, summary.error
        assert host.sent == [(TARGET, "早安呀，今天也要加油")]
        reply = tool_replies(llm.requests[2])[-1]
        assert reply["status"] == "sent" and reply["content"] == "早安呀，今天也要加油"
        [row] = await _pending(mem)
        assert row["delivered_at"] is not None and row["attempts"] == 1
        # once: the target's next private message finds nothing left to send
        assert await mem.send_pending(TARGET) is not None
        assert host.sent == [(TARGET, "早安呀，今天也要加油")]


async def test_a_failed_send_is_kept_and_retried_once(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__allow_send_to_user=True) as mem:
        host = Host()
        host.failing = "bot offline"
        mem.private_send = host
        llm.call("subconscious_send_to_user", {"intent": "关心"})
        llm.say("最近还好吗？")
        llm.call("subconscious_iter_stop", {"summary": "发了关心"})
        assert (await mem.run_cycle(TARGET)).ok
        reply = tool_replies(llm.requests[2])[-1]
        assert reply["status"] == "queued" and "bot offline" in reply["message"]
        [row] = await _pending(mem)
        assert (row["delivered_at"], row["attempts"], row["last_error"]) == (
            None,
            1,
            "bot offline",
        )
        host.failing = None
        delivery = await mem.send_pending(TARGET)  # the retry (next message / session job)
        assert delivery is not None and [m.content for m in delivery.sent] == ["最近还好吗？"]
        assert host.sent == [(TARGET, "最近还好吗？")]
        [row] = await _pending(mem)
        assert row["delivered_at"] is not None and row["attempts"] == 2
        again = await mem.send_pending(TARGET)
        assert again is not None and again.sent == [] and len(host.sent) == 1
