"""Whole L3 cycles against a scripted OpenAI-compatible model over real HTTP, the database
checked afterwards: merges, a model error mid-cycle, a looping model, max_iterations,
the system prompt's day invariance and the hooks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from amrita_memory_pg.domain.profile import Profile, ProfileActor
from amrita_memory_pg.testing_llm import ScriptedLLM
from tests.support.l3 import GROUP, TARGET, USAGE, add, cycle_row, loop_memory, tool_replies


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


async def test_a_cycle_merges_the_prepass_duplicates_and_the_database_shows_it(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        keep = await add(mem, "用户喜欢猫，家里养了一只橘猫", importance=5)
        dup = await add(mem, "用户喜欢猫，家里养了一只橘猫", importance=3)
        other = await add(mem, "用户住在上海", importance=8)
        llm.call("subconscious_duplicate_helper", {"candidates_only": True})
        llm.call(
            "subconscious_update_memory",
            {"id": keep, "content": "用户喜欢猫，家里养了一只叫大橘的橘猫", "importance": "high"},
            ("subconscious_delete_memory", {"id": dup}),
        )
        llm.call("subconscious_iter_stop", {"summary": "合并了一组重复"})
        successes: list[int] = []
        mem.l3_hooks.on_success.append(lambda cid: _note(successes, cid))

        summary = await mem.run_cycle(TARGET)

        assert summary.ok, summary.error
        assert (summary.iterations, summary.tool_calls, summary.memories_changed) == (3, 5, 2)
        assert (summary.prompt_tokens, summary.completion_tokens) == (300, 30)
        assert summary.summary == "合并了一组重复"
        assert successes == [summary.cycle_id]
        # the runner's own first call: get_context, and it saw the planted group
        context = tool_replies(llm.requests[0])[0]
        assert context["status"] == "success" and context["duplicate_groups"] == 1
        helper = tool_replies(llm.requests[1])[1]
        assert helper["candidate_duplicate_groups"] == [[keep, dup]]
        assert {m["id"] for m in helper["memories"]} == {keep, dup}  # only the candidates
        rows = await mem.pool.fetch(
            "SELECT id, content, importance FROM amrita_memory.memory WHERE partition_key = $1 ORDER BY id",
            TARGET,
        )
        assert {r["id"] for r in rows} == {keep, other}
        merged = next(r for r in rows if r["id"] == keep)
        assert merged["content"].endswith("叫大橘的橘猫") and merged["importance"] == 8
        row = await cycle_row(mem, summary.cycle_id)
        assert row["ok"] is True and row["ended_at"] is not None and row["trigger"] == "manual"
        assert (row["prompt_tokens"], row["memories_changed"]) == (300, 2)
        usage = await mem.pool.fetch(
            "SELECT purpose, prompt_tokens FROM amrita_memory.token_usage WHERE cycle_id = $1",
            summary.cycle_id,
        )
        assert [(u["purpose"], u["prompt_tokens"]) for u in usage] == [("step", 100)] * 3
        # the next cycle's context shows this one
        llm.call("subconscious_iter_stop", {"summary": "无事可做"})
        await mem.run_cycle(TARGET)
        assert tool_replies(llm.requests[3])[0]["last_run_summary"] == "合并了一组重复"


async def _note(seen: list[int], cycle_id: int) -> None:
    seen.append(cycle_id)


async def test_a_model_error_mid_cycle_fails_it_and_keeps_what_was_done_and_spent(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        first = await add(mem, "用户喜欢跑步")
        llm.call("subconscious_update_memory", {"id": first, "tags": "运动"})
        llm.fail(400, "context length exceeded")
        released: list[int] = []
        completed: list[int] = []
        mem.l3_hooks.on_failure.append(lambda cid: _note(released, cid))
        mem.l3_hooks.on_success.append(lambda cid: _note(completed, cid))

        summary = await mem.run_cycle(TARGET)

        assert not summary.ok
        assert summary.error is not None and "400" in summary.error
        assert (summary.iterations, summary.tool_calls, summary.prompt_tokens) == (2, 2, 100)
        assert released == [summary.cycle_id] and completed == []
        record = await mem.memories.get(TARGET, first)
        assert record is not None and record.tags == ("运动",)  # the finished call stayed
        row = await cycle_row(mem, summary.cycle_id)
        assert row["ok"] is False and row["prompt_tokens"] == 100 and row["ended_at"] is not None


async def test_a_model_repeating_one_call_is_stopped_as_a_stall(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__loop_detect_threshold=3) as mem:
        for _ in range(5):
            llm.call("subconscious_get_memory_stats", {})
        summary = await mem.run_cycle(TARGET)
        assert not summary.ok and summary.error is not None
        assert summary.error.startswith("loop detected: subconscious_get_memory_stats")
        # get_context + two stats calls ran; the third identical one did not
        assert (summary.iterations, summary.tool_calls) == (3, 3)
        assert len(llm.requests) == 3


async def test_max_iterations_bounds_the_model_calls_of_a_cycle(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__max_iterations=2) as mem:
        llm.call("subconscious_list_memory", {"limit": 1})
        llm.call("subconscious_list_memory", {"limit": 2})
        llm.call("subconscious_iter_stop", {"summary": "too late"})
        summary = await mem.run_cycle(TARGET)
        assert not summary.ok and summary.error == (
            "max_iterations (2) reached without subconscious_iter_stop"
        )
        assert len(llm.requests) == 2 and summary.iterations == 2


async def test_a_model_answering_without_iter_stop_fails_the_cycle(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        llm.say("整理完了")
        summary = await mem.run_cycle(TARGET)
        assert not summary.ok
        assert summary.error == "the model stopped without calling subconscious_iter_stop"


async def test_the_system_prompt_is_byte_identical_within_a_utc_day(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        assert mem.consolidator is not None
        systems: list[str] = []
        for moment in (
            datetime(2026, 12, 3, 0, 1, tzinfo=UTC),
            datetime(2026, 12, 3, 23, 59, tzinfo=UTC),
            datetime(2026, 12, 4, 0, 1, tzinfo=UTC),
        ):
            mem.consolidator.clock = lambda moment=moment: moment  # type: ignore[misc]
            llm.reset()
            llm.call("subconscious_list_memory", {"limit": 1})
            llm.call("subconscious_iter_stop", {"summary": "ok"})
            assert (await mem.run_cycle(TARGET)).ok
            per_call = {r["messages"][0]["content"] for r in llm.requests}
            assert len(per_call) == 1  # every call of the cycle: the same prefix
            systems.append(per_call.pop())
        assert systems[0].encode() == systems[1].encode()
        assert systems[1] != systems[2] and "2026-12-04" in systems[2]
        # the templates were created from the defaults, user-editable
        main = tmp_path / "config" / "prompt" / "subconscious_main.md.jinja2"
        assert main.is_file() and "{{ current_date }}" in main.read_text(encoding="utf-8")
        main.write_text("自定义：{{ target_user_id }} {{ current_date }}", encoding="utf-8")
        llm.reset()
        llm.call("subconscious_iter_stop", {"summary": "ok"})
        await mem.run_cycle(TARGET)
        assert llm.requests[0]["messages"][0]["content"].startswith("自定义：10001 2026-12-04")


async def test_the_scheduler_runs_the_loop_and_the_loop_shows_the_plan(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """Memory wires the two halves of L3: a scheduled window runs the loop's cycle
    (recorded as scheduled), success resets the penalty, and get_context shows the
    scheduler's planned window; /memory dmn's path updates the same state."""
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__target_user_id="10001") as mem:
        await mem.scheduling.on_user_message(TARGET, None, datetime.now(UTC))
        before = await mem.scheduling.state(TARGET)
        assert before is not None and before.penalty == 1 and before.next_run_at is not None
        llm.call("subconscious_iter_stop", {"summary": "按计划整理"})

        summary, nxt = await mem.scheduling.run_cycle(TARGET)

        assert summary.ok, summary.error
        row = await cycle_row(mem, summary.cycle_id)
        assert row["trigger"] == "scheduled"
        context = tool_replies(llm.requests[0])[0]
        assert context["idle_plan"] is not None  # the scheduler's window, shown to the loop
        after = await mem.scheduling.state(TARGET)
        assert after is not None and after.penalty == 0 and after.runs == before.runs + 1
        assert nxt is not None and after.next_run_at == nxt.run_at

        llm.call("subconscious_iter_stop", {"summary": "手动整理"})
        manual, planned = await mem.run_cycle_and_plan(TARGET)
        assert manual.ok and planned is not None
        assert (await cycle_row(mem, manual.cycle_id))["trigger"] == "manual"
        again = await mem.scheduling.state(TARGET)
        assert again is not None and again.runs == after.runs + 1
        dry, none = await mem.run_cycle_and_plan(TARGET, dry_run=True)
        assert dry.dry_run and none is None
        final = await mem.scheduling.state(TARGET)
        assert final is not None and final.runs == again.runs  # a dry run is not a run


async def test_suggestions_a_cycle_reads_are_handled_only_if_it_succeeds(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """W15 end to end: the runner's hooks are the knowledge base's complete/release, so a
    failed cycle leaves what it read pending, and get_context counts what waits."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        await mem.knowledge.suggest(
            author_id="10002", action="create", title="猫粮", summary="猫粮品牌", body="皇家"
        )
        llm.call("subconscious_read_suggestions", {})
        llm.fail(500, "upstream exploded")
        failed = await mem.run_cycle(TARGET)
        assert not failed.ok
        assert tool_replies(llm.requests[0])[0]["pending_knowledge_suggestions"]["count"] == 1
        assert tool_replies(llm.requests[1])[1]["total"] == 1  # it did read (claim) it
        assert (await mem.knowledge.pending_suggestions())[0] == 1  # released again

        llm.call("subconscious_read_suggestions", {})
        llm.call("subconscious_iter_stop", {"summary": "处理了建议"})
        done = await mem.run_cycle(TARGET)
        assert done.ok, done.error
        assert (await mem.knowledge.pending_suggestions())[0] == 0


async def test_the_first_turn_merges_from_get_context_with_only_the_needed_tools_offered(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """The loop's token economy: the pre-pass is in the runner's get_context reply,
    so one model call merges a group (one call, one transaction), deletes a stale item
    and stops; the schemas sent are only those the cycle needs. The pre-pass names
    memories by 8-character id prefixes, which the tools take back. (The single edit
    tools, as ``batch_edits = false`` offers them; the batch: test_l3_batch.py.)"""
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__batch_edits=False) as mem:
        keep = await add(mem, "用户喜欢猫，家里养了一只橘猫", importance=5, tags=("宠物",))
        dup = await add(mem, "用户喜欢猫，家里养了一只橘猫", importance=3, tags=("猫",))
        other = await add(mem, "用户住在上海", importance=8)
        old = datetime(2025, 1, 1, tzinfo=UTC)
        stale = await add(mem, "临时提醒：周五交报告", importance=2, now=old)
        llm.call(
            "subconscious_merge_memories",
            {"keep_id": keep[:8], "merge_ids": [dup[:8]], "content": "用户养了一只叫大橘的橘猫"},
            ("subconscious_delete_memory", {"id": stale[:8]}),
            ("subconscious_iter_stop", {"summary": "合并一组，删一条过期"}),
        )
        summary = await mem.run_cycle(TARGET)

        assert summary.ok, summary.error
        assert (summary.iterations, summary.tool_calls, summary.memories_changed) == (1, 4, 3)
        context = tool_replies(llm.requests[0])[0]
        groups = context["duplicate_candidates"]
        assert [[item.split("|")[0] for item in g] for g in groups] == [[keep[:8], dup[:8]]]
        assert groups[0][0] == f"{keep[:8]}|medium|用户喜欢猫，家里养了一只橘猫"
        assert [c.split("|")[0] for c in context["cleanup_candidates"]] == [stale[:8]]
        offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
        assert {"subconscious_merge_memories", "subconscious_iter_stop"} <= offered
        assert "subconscious_batch_edit" not in offered
        assert "subconscious_batch_edit" not in llm.requests[0]["messages"][0]["content"]
        # nothing to do for these in this cycle (still callable by name)
        assert offered.isdisjoint(
            {
                "subconscious_get_context",
                "subconscious_list_memory",
                "subconscious_send_to_user",
                "subconscious_read_memo",
                "subconscious_duplicate_helper",
            }
        )
        assert all(
            "maxLength" not in p
            for t in llm.requests[0]["tools"]
            for p in t["function"]["parameters"]["properties"].values()
        )
        merged = await mem.memories.get(TARGET, keep)
        assert merged is not None
        assert (merged.content, merged.tags) == ("用户养了一只叫大橘的橘猫", ("宠物", "猫"))
        rows = await mem.pool.fetch(
            "SELECT id FROM amrita_memory.memory WHERE partition_key = $1", TARGET
        )
        assert {r["id"] for r in rows} == {keep, other}


KNOWLEDGE_TOOLS = {
    "subconscious_knowledge_list",
    "subconscious_knowledge_read",
    "subconscious_knowledge_create",
    "subconscious_knowledge_update",
    "subconscious_knowledge_delete",
    "subconscious_knowledge_search",
    "subconscious_read_suggestions",
}
PROFILE_TOOLS = {"subconscious_get_profile", "subconscious_update_profile"}


def _offered(request: dict[str, object]) -> set[str]:
    tools = request["tools"]
    assert isinstance(tools, list)
    return {t["function"]["name"] for t in tools}


async def test_knowledge_and_profile_tools_are_offered_only_when_they_have_work(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """No pending suggestion and a profile newer than every memory: neither the knowledge
    nor the profile tools (nor their guides) are sent — yet they still run by name; a
    group target never gets the profile tools, whatever it holds."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        await add(mem, "用户喜欢猫", importance=5)
        await add(mem, "群里约了周六爬山", key=GROUP, importance=5)
        await mem.profiles.replace(
            TARGET, Profile(summary="喜欢猫"), ProfileActor("cli", "test"), operation="test"
        )
        llm.call("subconscious_get_profile", {})
        llm.call("subconscious_knowledge_list", {})
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        summary = await mem.run_cycle(TARGET)

        assert summary.ok, summary.error
        context = tool_replies(llm.requests[0])[0]
        assert "pending_knowledge_suggestions" not in context  # none pending: left out
        assert "profile_hint" not in context
        offered = _offered(llm.requests[0])
        assert offered.isdisjoint(KNOWLEDGE_TOOLS | PROFILE_TOOLS)
        assert "subconscious_read_sessions" not in offered  # what a profile is made from
        system = llm.requests[0]["messages"][0]["content"]
        assert "## 用户画像" not in system and "## 全局知识库" not in system
        # not offered, still run when called by name
        assert tool_replies(llm.requests[1])[1]["summary"] == "喜欢猫"
        assert tool_replies(llm.requests[2])[2]["status"] == "success"

        llm.reset()
        llm.call("subconscious_iter_stop", {"summary": "群"})
        assert (await mem.run_cycle(GROUP)).ok
        group_context = tool_replies(llm.requests[0])[0]
        assert "profile_hint" not in group_context
        assert _offered(llm.requests[0]).isdisjoint(PROFILE_TOOLS)


async def test_knowledge_and_profile_tools_are_offered_when_there_is_something_new(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """A pending suggestion offers the knowledge tools; a memory written after the
    profile's last change offers the profile tools; each guide comes with its tools."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        await mem.profiles.replace(
            TARGET, Profile(summary="喜欢猫"), ProfileActor("cli", "test"), operation="test"
        )
        await add(mem, "用户最近开始学吉他", importance=6)
        await mem.knowledge.suggest(
            author_id="10002", action="create", title="猫粮", summary="猫粮品牌", body="皇家"
        )
        llm.call("subconscious_read_suggestions", {})
        llm.call("subconscious_iter_stop", {"summary": "看了建议"})
        summary = await mem.run_cycle(TARGET)

        assert summary.ok, summary.error
        context = tool_replies(llm.requests[0])[0]
        assert context["pending_knowledge_suggestions"]["count"] == 1
        assert context["profile_hint"] == "画像上次更新后新增 1 条记忆"
        offered = _offered(llm.requests[0])
        # the profile's edits go through the batch tool's profile op (batch_edits)
        assert offered >= KNOWLEDGE_TOOLS | {"subconscious_get_profile", "subconscious_batch_edit"}
        assert "subconscious_update_profile" not in offered
        system = llm.requests[0]["messages"][0]["content"]
        assert "## 用户画像" in system and "## 全局知识库" in system
        # fixed for the cycle: every call sends the same tools and system prompt
        assert all(_offered(r) == offered for r in llm.requests)
        assert len({r["messages"][0]["content"] for r in llm.requests}) == 1


async def test_a_target_without_a_profile_is_offered_no_read_of_it_and_builds_one_in_the_batch(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """No profile yet: nothing to read, so get_profile's schema is not sent; the profile
    guide still comes (with the batch, whose profile op appends the first lines)."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        await add(mem, "用户最近开始学吉他", importance=6)
        op = {"op": "profile", "summary": "在学吉他", "new_lines": "最近开始学吉他"}
        llm.call("subconscious_batch_edit", {"ops": [op]})
        llm.call("subconscious_iter_stop", {"summary": "建了画像"})
        summary = await mem.run_cycle(TARGET)

        assert summary.ok, summary.error
        context = tool_replies(llm.requests[0])[0]
        assert context["profile_hint"] == "尚无画像；可从 1 条记忆提炼"
        offered = _offered(llm.requests[0])
        assert "subconscious_batch_edit" in offered and offered.isdisjoint(PROFILE_TOOLS)
        assert "subconscious_read_sessions" in offered
        system = llm.requests[0]["messages"][0]["content"]
        assert "## 用户画像" in system
        profile = await mem.profiles.get(TARGET)
        assert (profile.summary, profile.lines) == ("在学吉他", ("最近开始学吉他",))

        llm.reset()  # now it has one, and a newer memory: the read is offered
        await add(mem, "用户周末去爬山", importance=6)
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        assert (await mem.run_cycle(TARGET)).ok
        again = tool_replies(llm.requests[0])[0]
        assert again["profile_hint"] == "画像上次更新后新增 1 条记忆"
        assert "subconscious_get_profile" in _offered(llm.requests[0])


async def test_malformed_tool_calls_end_the_cycle_with_a_sentence(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """The run record said Python's words ('str' object has no attribute
    'get') when the model sent tool_calls in a shape the API does not have."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        for malformed in ("abc", ["x"], [{"id": "c1", "function": "subconscious_iter_stop"}]):
            llm.script.append({"role": "assistant", "content": "", "tool_calls": malformed})
            summary = await mem.run_cycle(TARGET)
            assert not summary.ok and summary.error is not None, malformed
            assert summary.error.startswith("the model's reply is malformed: "), summary.error
            assert "attribute" not in summary.error and "object" not in summary.error
            row = await cycle_row(mem, summary.cycle_id)
            assert row["error"] == summary.error
