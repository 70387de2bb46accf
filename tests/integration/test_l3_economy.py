"""What a cycle costs, over real HTTP: its requests are one growing prefix (byte for byte,
so a provider's prefix cache serves all but the new turns), cycles of different targets
share the system prompt and schemas, and a token budget stops a cycle cleanly."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.llm.tokens import token_counter
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing_llm import ScriptedLLM
from tests.support.l3 import (
    TARGET,
    USAGE,
    add,
    cycle_row,
    loop_memory,
    tool_replies,
    top_level_spans,
)

OTHER = "QQPlatform_Private_10002"


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


async def _seed(mem: Memory, key: str = TARGET) -> tuple[str, str]:
    keep = await add(mem, "用户喜欢猫，家里养了一只橘猫", key=key, importance=5)
    dup = await add(mem, "用户喜欢猫，家里养了一只橘猫。", key=key, importance=3)
    await add(mem, "用户住在上海", key=key, importance=8)
    return keep, dup


async def test_every_request_of_a_cycle_starts_with_the_previous_one_byte_for_byte(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """Time moves between the calls, across UTC midnight; counters grow; the tools' replies
    differ: none of it may reach what was sent before (the system prompt, the schemas,
    earlier turns), or every later call pays the whole conversation again."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        assert mem.consolidator is not None
        keep, dup = await _seed(mem)
        moment = [datetime(2026, 12, 3, 23, 50, tzinfo=UTC)]

        def clock() -> datetime:
            moment[0] += timedelta(minutes=7)
            return moment[0]

        mem.consolidator.clock = clock
        mem.loop.clock = clock
        llm.call("subconscious_read_memory", {"query": "猫"})
        llm.call(
            "subconscious_batch_edit",
            {"ops": [{"op": "merge", "keep_id": keep[:8], "merge_ids": [dup[:8]]}]},
        )
        llm.call("subconscious_get_memory_stats", {})
        llm.call("subconscious_iter_stop", {"summary": "合并一组"})

        summary = await mem.run_cycle(TARGET)

        assert summary.ok, summary.error
        assert len(llm.raw_requests) == 4 and moment[0].day == 4  # past midnight
        spans = [top_level_spans(raw) for raw in llm.raw_requests]
        for before, after in itertools.pairwise(spans):
            assert after["tools"] == before["tools"]
            assert after["model"] == before["model"]
            sent = before["messages"]
            assert sent.endswith(b"]")
            # the previous request's messages, each byte, then more of them
            assert after["messages"].startswith(sent[:-1] + b",")
            assert len(after["messages"]) > len(sent)
        assert "2026-12-03" in llm.requests[-1]["messages"][0]["content"]


async def test_cycles_of_different_targets_share_the_system_prompt_and_schemas(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """The default templates name no target, so a bot's cycles of one day hit the same
    cached prefix (when they are offered the same tools)."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        await _seed(mem, TARGET)
        await _seed(mem, OTHER)
        for key in (TARGET, OTHER):
            llm.call("subconscious_iter_stop", {"summary": "无事"})
            assert (await mem.run_cycle(key)).ok
        first, second = (top_level_spans(raw) for raw in llm.raw_requests)
        assert first["tools"] == second["tools"]
        system = [json.loads(s["messages"])[0] for s in (first, second)]
        assert system[0] == system[1]
        user = [json.loads(s["messages"])[1]["content"] for s in (first, second)]
        assert TARGET in user[0] and OTHER in user[1]  # the target is in the user message


def _count_usage(seen: list[int]) -> Any:
    """The stub's usage: the request's prompt counted with cl100k, 10 completion tokens."""
    count = token_counter()

    def usage(body: dict[str, Any]) -> dict[str, Any]:
        prompt = count(json.dumps(body["messages"], ensure_ascii=False)) + count(
            json.dumps(body.get("tools") or [], ensure_ascii=False)
        )
        seen.append(prompt)
        return {"prompt_tokens": prompt, "completion_tokens": 10}

    return usage


def _script(llm: ScriptedLLM, keep: str, dup: str) -> None:
    llm.call(
        "subconscious_batch_edit",
        {"ops": [{"op": "merge", "keep_id": keep[:8], "merge_ids": [dup[:8]]}]},
    )
    llm.call("subconscious_read_memory", {"query": "上海"})
    llm.call("subconscious_iter_stop", {"summary": "合并一组"})


async def test_a_cycle_stops_cleanly_at_its_token_budget_and_the_next_is_told_where(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        assert mem.consolidator is not None
        keep, dup = await _seed(mem)
        prompts: list[int] = []
        llm.usage_for = _count_usage(prompts)
        _script(llm, keep, dup)
        dry = await mem.run_cycle(TARGET, dry_run=True)  # the same requests, nothing written
        assert dry.ok and len(prompts) == 3
        p1, p2, p3 = prompts
        # room for the first two calls, not for the third
        budget = p1 + p2 + 20 + p3 // 2
        sub = mem.consolidator.settings
        mem.consolidator.settings = sub.model_copy(update={"cycle_token_budget": budget})
        llm.reset()
        prompts.clear()
        _script(llm, keep, dup)

        summary = await mem.run_cycle(TARGET)

        assert not summary.ok and summary.error is not None
        assert summary.error.startswith("token budget: the next model call")
        assert f"cycle_token_budget ({budget})" in summary.error
        assert (summary.iterations, summary.tool_calls, len(llm.requests)) == (2, 3, 2)
        # what was done stays: the merge of the first call
        assert await mem.memories.get(TARGET, dup) is None
        assert await mem.memories.get(TARGET, keep) is not None
        row = await cycle_row(mem, summary.cycle_id)
        assert row["ok"] is False and row["ended_at"] is not None
        assert row["prompt_tokens"] == sum(prompts) <= budget
        assert row["completion_tokens"] == 20
        assert "token 预算" in row["summary"] and "subconscious_batch_edit×1" in row["summary"]
        state = await mem.scheduling.state(TARGET)
        assert state is not None and (state.last_error or "").startswith("token budget")

        # the next cycle reads where this one stopped
        mem.consolidator.settings = sub
        llm.reset()
        llm.call("subconscious_iter_stop", {"summary": "接着整理"})
        assert (await mem.run_cycle(TARGET)).ok
        context = tool_replies(llm.requests[0])[0]
        assert "token 预算" in context["last_run_summary"]
        assert context["recent_runs"][0]["ok"] is False


async def test_a_budget_below_the_first_request_stops_before_any_model_call(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__cycle_token_budget=200) as mem:
        await _seed(mem)
        llm.call("subconscious_iter_stop", {"summary": "不会发生"})
        summary = await mem.run_cycle(TARGET)
        assert not summary.ok and summary.error is not None
        assert summary.error.startswith("token budget")
        assert (summary.iterations, len(llm.requests), summary.prompt_tokens) == (0, 0, 0)
        row = await cycle_row(mem, summary.cycle_id)
        assert "第 1 次模型调用前停止" in row["summary"]


async def test_an_endpoint_reporting_no_usage_is_held_to_the_budget_by_the_estimate(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        assert mem.consolidator is not None
        await _seed(mem)
        llm.usage = None  # the endpoint sends no usage member
        llm.call("subconscious_read_memory", {"query": "猫"})
        llm.call("subconscious_iter_stop", {"summary": "只读"})
        assert (await mem.run_cycle(TARGET, dry_run=True)).ok
        first = llm.requests[0]
        count = token_counter()
        estimate = count(json.dumps(first["messages"], ensure_ascii=False)) + count(
            json.dumps(first["tools"], ensure_ascii=False)
        )
        sub = mem.consolidator.settings
        mem.consolidator.settings = sub.model_copy(
            update={"cycle_token_budget": estimate + estimate // 2}
        )
        llm.reset()
        llm.call("subconscious_read_memory", {"query": "猫"})
        llm.call("subconscious_iter_stop", {"summary": "只读"})

        summary = await mem.run_cycle(TARGET)

        assert not summary.ok and (summary.error or "").startswith("token budget")
        assert (summary.iterations, len(llm.requests), summary.prompt_tokens) == (1, 1, 0)
