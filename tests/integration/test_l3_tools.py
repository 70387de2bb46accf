"""The loop's tools inside whole cycles: proactive messages (private only, delivered once),
source=user memories protected, a dry run that writes nothing, per-cycle validity (B3)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.domain.consolidation import CycleContext
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from tests.support.l3 import GROUP, TARGET, USAGE, add, loop_memory, tool_replies


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


async def test_send_to_user_queues_one_message_for_a_private_target_delivered_once(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__allow_send_to_user=True) as mem:
        llm.call(
            "subconscious_send_to_user", {"intent": "关心一下考试", "memory_context": "下周考试"}
        )
        llm.say("考试准备得怎么样啦？")  # the send template's own completion
        llm.call("subconscious_send_to_user", {"intent": "再说一句"})
        llm.call("subconscious_iter_stop", {"summary": "发了一条关心"})
        summary = await mem.run_cycle(TARGET)
        assert summary.ok, summary.error
        send_request = llm.requests[1]
        assert "关心一下考试" in send_request["messages"][0]["content"]  # the send template
        assert "tools" not in send_request
        first, second = tool_replies(llm.requests[3])[1:3]
        assert first["status"] == "queued" and first["content"] == "考试准备得怎么样啦？"
        assert second["status"] == "error" and "每轮最多一条" in second["message"]
        purposes = await mem.pool.fetch(
            "SELECT purpose FROM amrita_memory.token_usage WHERE cycle_id = $1 ORDER BY id",
            summary.cycle_id,
        )
        assert [p["purpose"] for p in purposes] == ["step", "send", "step", "step"]
        assert summary.prompt_tokens == 400  # the send call is accounted (W16)
        taken = await mem.take_pending_messages(TARGET)
        assert [m.content for m in taken] == ["考试准备得怎么样啦？"]
        assert await mem.take_pending_messages(TARGET) == []  # delivered once


async def test_send_to_user_is_refused_for_a_group_target_and_when_not_allowed(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__allow_send_to_user=True) as mem:
        llm.call("subconscious_send_to_user", {"intent": "hi"})
        llm.call("subconscious_iter_stop", {"summary": "x"})
        await mem.run_cycle(GROUP)
        reply = tool_replies(llm.requests[1])[1]
        assert reply["status"] == "error" and "私聊" in reply["message"]
        assert await mem.consolidation.count_messages(GROUP) == 0
    llm.reset()
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        llm.call("subconscious_send_to_user", {"intent": "hi"})
        llm.call("subconscious_iter_stop", {"summary": "x"})
        await mem.run_cycle(TARGET)
        reply = tool_replies(llm.requests[1])[1]
        assert reply == {"status": "error", "message": "allow_send_to_user 未启用"}
        assert await mem.consolidation.count_messages(TARGET) == 0


async def test_memories_the_user_added_can_be_flagged_but_not_rewritten_or_deleted(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        manual = await add(mem, "我对花生过敏", source="user", tags=("健康",))
        llm.call(
            "subconscious_delete_memory",
            {"id": manual},
            ("subconscious_update_memory", {"id": manual, "content": "用户对坚果过敏"}),
            ("subconscious_update_memory", {"id": manual, "importance": "low"}),
            ("subconscious_update_memory", {"id": manual, "tags": "待确认"}),
            ("subconscious_update_memory", {"id": manual, "tags": "健康,待确认"}),
        )
        llm.call("subconscious_iter_stop", {"summary": "标记了一条"})
        summary = await mem.run_cycle(TARGET)
        replies = tool_replies(llm.requests[1])[1:6]
        assert [r["status"] for r in replies] == ["error"] * 4 + ["success"]
        assert all("source=user" in r["message"] for r in replies[:4])
        assert summary.memories_changed == 1
        record = await mem.memories.get(TARGET, manual)
        assert record is not None
        assert (record.content, record.importance, record.tags) == (
            "我对花生过敏",
            5,
            ("健康", "待确认"),
        )


async def test_a_dry_run_answers_as_if_done_and_writes_nothing(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__allow_send_to_user=True) as mem:
        a = await add(mem, "用户喜欢咖啡")
        b = await add(mem, "用户喜欢咖啡")
        await mem.memos.replace(TARGET, "旧备忘录")
        before = await mem.pool.fetch(
            "SELECT id, content, tags, importance, updated_at FROM amrita_memory.memory ORDER BY id"
        )
        llm.call(
            "subconscious_update_memory",
            {"id": a, "content": "用户每天早上喝咖啡"},
            ("subconscious_delete_memory", {"id": b}),
            ("subconscious_write_memory", {"content": "新事实", "tags": "x", "importance": "low"}),
            ("subconscious_rewrite_memo", {"content": "压缩后的备忘录"}),
            ("subconscious_send_to_user", {"intent": "问候"}),
        )
        llm.say("早呀")
        llm.call("subconscious_iter_stop", {"summary": "演练"})
        summary = await mem.run_cycle(TARGET, dry_run=True)
        assert summary.ok and summary.dry_run and summary.memories_changed == 3
        replies = tool_replies(llm.requests[2])[1:6]
        assert all(r["status"] in ("success", "queued") and r["dry_run"] for r in replies)
        after = await mem.pool.fetch(
            "SELECT id, content, tags, importance, updated_at FROM amrita_memory.memory ORDER BY id"
        )
        assert after == before
        assert (await mem.memos.get(TARGET)).content == "旧备忘录"
        assert await mem.consolidation.count_messages(TARGET) == 0
        row = await mem.consolidation.get_cycle(TARGET, summary.cycle_id)
        assert row is not None and row["dry_run"] is True
        # a dry run is not "the last run" the next cycle is told about
        assert await mem.consolidation.last_run(TARGET) is None


async def test_iter_stop_before_get_context_is_refused_in_every_cycle(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        registry = mem.registries["consolidation"]
        for cycle_id in (1, 2):  # B3: the flags are per cycle, not per process
            cycle = CycleContext(cycle_id=cycle_id, target_key=TARGET)
            ctx = ToolContext(platform="l3", user_id="10001", cycle=cycle)
            refused = await registry.call("subconscious_iter_stop", {"summary": "x"}, ctx)
            assert "周期无效" in refused and not cycle.stopped
            await registry.call("subconscious_get_context", {}, ctx)
            accepted = await registry.call("subconscious_iter_stop", {"summary": "x"}, ctx)
            assert "acknowledged" in accepted and cycle.stopped
        chat = ToolContext(platform="qq", user_id="10001")
        assert "只在后台整理循环" in await registry.call("subconscious_list_memory", {}, chat)


async def test_the_memo_tools_let_the_loop_compress_l1_under_its_cap(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, memo_max_chars=100) as mem:
        await mem.memos.replace(TARGET, "用户叫小明。" * 15)  # 90 of 100 characters
        llm.call("subconscious_read_memo", {})
        llm.call("subconscious_rewrite_memo", {"content": "x" * 101})
        llm.call("subconscious_rewrite_memo", {"content": "用户叫小明。"})
        llm.call("subconscious_iter_stop", {"summary": "压缩了备忘录"})
        summary = await mem.run_cycle(TARGET)
        assert summary.ok
        context = tool_replies(llm.requests[0])[0]
        assert context["memo_chars"] == 90 and context["memo_hint"]
        too_long = tool_replies(llm.requests[2])[-1]
        assert too_long["status"] == "error" and too_long["max_chars"] == 100
        assert (await mem.memos.get(TARGET)).content == "用户叫小明。"


async def test_duplicate_helper_pages_with_a_cursor_that_survives_deletions(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        ids = [await add(mem, f"第 {i} 条不同的记忆 {i * 7919}") for i in range(5)]
        registry = mem.registries["consolidation"]
        ctx = ToolContext(
            platform="l3", user_id="10001", cycle=CycleContext(cycle_id=1, target_key=TARGET)
        )
        import json

        page = json.loads(await registry.call("subconscious_duplicate_helper", {"limit": 2}, ctx))
        assert [m["id"] for m in page["memories"]] == ids[:2] and page["has_more"]
        await mem.memories.delete(TARGET, ids[0])
        nxt = json.loads(
            await registry.call(
                "subconscious_duplicate_helper", {"limit": 2, "cursor": page["next_cursor"]}, ctx
            )
        )
        assert [m["id"] for m in nxt["memories"]] == ids[2:4] and nxt["passed"] == 1
        bad = json.loads(
            await registry.call("subconscious_duplicate_helper", {"limit": 2, "cursor": "%%"}, ctx)
        )
        assert bad["passed"] == 0


async def test_pending_messages_reach_only_the_targets_private_chat_while_allowed(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__allow_send_to_user=True) as mem:
        await mem.consolidation.queue_message(TARGET, None, "早安", now=_now())
        in_group = ToolContext(platform="qq", user_id="10001", group_id="777")
        someone_else = ToolContext(platform="qq", user_id="10002")
        private = ToolContext(platform="qq", user_id="10001")
        assert await mem.pending_for(in_group) == []  # W14: never in a group
        assert await mem.pending_for(someone_else) == []
        assert [m.content for m in await mem.pending_for(private)] == ["早安"]
        assert await mem.pending_for(private) == []  # once
    async with loop_memory(db_dsn, tmp_path, llm) as mem:  # allow_send_to_user off
        await mem.consolidation.queue_message(TARGET, None, "晚安", now=_now())
        assert await mem.pending_for(ToolContext(platform="qq", user_id="10001")) == []
        assert await mem.consolidation.count_messages(TARGET) == 1


def _now():  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime.now(UTC)


async def test_read_sessions_splits_the_chat_log_and_summarises_each_session_once(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    from datetime import UTC, datetime, timedelta

    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        start = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
        for minutes, text in ((0, "早"), (5, "今天去爬山"), (120, "晚上好"), (125, "吃了火锅")):
            await mem.activity.record_user_message(
                session_key=TARGET,
                user_key=TARGET,
                user_id="10001",
                group_id=None,
                text=text,
                now=start + timedelta(minutes=minutes),
            )
        llm.call("subconscious_read_sessions", {"n": 5})
        llm.say("晚上聊了火锅")  # newest session first
        llm.say("上午说去爬山")
        llm.call(
            "subconscious_read_sessions", {"n": 5}, ("subconscious_read_chat_context", {"limit": 2})
        )
        llm.call("subconscious_iter_stop", {"summary": "读了近况"})
        summary = await mem.run_cycle(TARGET)
        assert summary.ok, summary.error
        sessions = tool_replies(llm.requests[3])[1]
        assert [s["message_count"] for s in sessions["sessions"]] == [2, 2]
        assert sessions["sessions"][0]["summary"] == "[2026-12-01 12:00] 晚上聊了火锅"
        again, chat = tool_replies(llm.requests[4])[2:4]
        assert again["sessions"] == sessions["sessions"]  # cached: no further summary calls
        assert [m["content"] for m in chat["recent"]] == ["晚上好", "吃了火锅"]
        assert "status" not in chat  # the reference's shape
        purposes = await mem.pool.fetch(
            "SELECT purpose FROM amrita_memory.token_usage WHERE cycle_id = $1 ORDER BY id",
            summary.cycle_id,
        )
        assert [p["purpose"] for p in purposes] == ["step", "summary", "summary", "step", "step"]


def _ctx(cycle_id: int = 1, *, key: str = TARGET, dry_run: bool = False) -> ToolContext:
    cycle = CycleContext(cycle_id=cycle_id, target_key=key, dry_run=dry_run)
    return ToolContext(platform="l3", user_id="10001", cycle=cycle)


async def _rows(mem: Any) -> list[tuple[Any, ...]]:
    rows = await mem.pool.fetch(
        "SELECT partition_key, id, content, tags, importance, updated_at"
        " FROM amrita_memory.memory ORDER BY id"
    )
    return [tuple(r.values()) for r in rows]


async def test_merge_memories_refuses_user_rows_unknown_and_foreign_ids_writing_nothing(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        keep = await add(mem, "用户喜欢咖啡")
        dup = await add(mem, "用户喜欢咖啡。")
        manual = await add(mem, "用户喜欢咖啡！", source="user")
        foreign = await add(mem, "用户喜欢咖啡", key="QQPlatform_Private_20002")
        registry = mem.registries["consolidation"]
        ctx = _ctx()
        before = await _rows(mem)

        async def merge(**args: Any) -> dict[str, Any]:
            result: dict[str, Any] = json.loads(
                await registry.call("subconscious_merge_memories", args, ctx)
            )
            return result

        refusals = [
            await merge(keep_id=keep, merge_ids=[dup, manual]),  # a user's row in the group
            await merge(keep_id=keep, merge_ids=f"{dup},nope"),  # an unknown id
            await merge(keep_id=keep, merge_ids=[dup, foreign]),  # another partition's id
            await merge(keep_id=foreign, merge_ids=[dup]),  # keep_id of another partition
            await merge(keep_id=manual, merge_ids=[dup], content="改写"),  # rewrite a user's row
            await merge(keep_id=keep, merge_ids=[keep]),  # nothing to merge
        ]
        assert [r["status"] for r in refusals] == ["error"] * 6
        assert "source=user" in refusals[0]["message"] and "未合并" in refusals[0]["message"]
        assert "nope" in refusals[1]["message"]
        assert foreign in refusals[2]["message"] and foreign in refusals[3]["message"]
        assert "source=user" in refusals[4]["message"]
        assert await _rows(mem) == before and ctx.cycle is not None and ctx.cycle.changed == 0
        # a user's row may be the one kept when its content stays: the others go
        ok = await merge(keep_id=manual, merge_ids=f"{keep}，{dup}", importance="medium")
        assert ok == {"status": "success", "id": manual, "deleted": 2}
        kept = await mem.memories.get(TARGET, manual)
        assert kept is not None and (kept.content, kept.importance) == ("用户喜欢咖啡！", 5)
        assert await mem.memories.count(TARGET) == 1
        assert await mem.memories.get("QQPlatform_Private_20002", foreign) is not None


async def test_merge_memories_in_a_dry_run_answers_as_if_done_and_writes_nothing(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        keep = await add(mem, "用户喜欢咖啡")
        dup = await add(mem, "用户喜欢咖啡。")
        before = await _rows(mem)
        ctx = _ctx(dry_run=True)
        reply = json.loads(
            await mem.registries["consolidation"].call(
                "subconscious_merge_memories",
                {"keep_id": keep, "merge_ids": [dup], "content": "用户每天喝咖啡"},
                ctx,
            )
        )
        assert reply == {"status": "success", "id": keep, "deleted": 1, "dry_run": True}
        assert ctx.cycle is not None and ctx.cycle.changed == 2
        assert await _rows(mem) == before


async def test_get_context_shows_the_last_max_abstracts_cycle_summaries(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__max_abstracts=2) as mem:
        for n in (1, 2, 3):
            llm.call("subconscious_iter_stop", {"summary": f"第 {n} 轮"})
            assert (await mem.run_cycle(TARGET)).ok
        llm.call("subconscious_iter_stop", {"summary": "演练"})
        await mem.run_cycle(TARGET, dry_run=True)  # a dry run is not a run
        llm.call("subconscious_iter_stop", {"summary": "第 4 轮"})
        await mem.run_cycle(TARGET)
        context = tool_replies(llm.requests[-1])[0]
        assert [r["summary"] for r in context["recent_runs"]] == ["第 3 轮", "第 2 轮"]
        assert all(r["ok"] is True for r in context["recent_runs"])


async def test_enable_memory_compress_off_takes_the_memo_tools_away(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(
        db_dsn, tmp_path, llm, memo_max_chars=100, subconscious__enable_memory_compress=False
    ) as mem:
        await mem.memos.replace(TARGET, "用户叫小明。" * 15)  # near the cap
        registry = mem.registries["consolidation"]
        assert registry.get("subconscious_read_memo") is None
        assert registry.get("subconscious_rewrite_memo") is None
        ctx = _ctx()
        context = json.loads(await registry.call("subconscious_get_context", {}, ctx))
        assert context["memo_chars"] == 90 and "memo_hint" not in context  # empty: left out
        refused = json.loads(
            await registry.call("subconscious_rewrite_memo", {"content": "压缩"}, ctx)
        )
        assert refused["status"] == "error" and "未知工具" in refused["message"]
        assert (await mem.memos.get(TARGET)).content == "用户叫小明。" * 15


async def test_allowed_tools_lends_read_only_chat_tools_acting_as_the_target(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="amrita_memory_pg"):
        async with loop_memory(
            db_dsn,
            tmp_path,
            llm,
            subconscious__allowed_tools=["read_memory", "read_memo", "delete_memory", "nope"],
        ) as mem:
            registry = mem.registries["consolidation"]
            assert registry.get("read_memory") is not None and registry.get("read_memo")
            assert registry.get("delete_memory") is None  # writes: the loop has its own
            await add(mem, "用户喜欢咖啡")
            await add(mem, "另一个人的记忆", key="QQPlatform_Private_20002")
            await mem.memos.replace(TARGET, "目标的备忘录")
            await mem.memos.replace(GROUP, "群备忘录")
            found = json.loads(
                await registry.call("read_memory", {"query": "咖啡", "scope": "user"}, _ctx())
            )
            assert found["status"] == "success"
            assert [d for docs in found["documents"] for d in docs] == ["用户喜欢咖啡"]
            memo = json.loads(await registry.call("read_memo", {}, _ctx()))
            assert "目标的备忘录" in json.dumps(memo, ensure_ascii=False)
            group = json.loads(await registry.call("read_memo", {}, _ctx(key=GROUP)))
            assert "群备忘录" in json.dumps(group, ensure_ascii=False)
            chat = ToolContext(platform="qq", user_id="10001")
            assert "只在后台整理循环" in await registry.call("read_memo", {}, chat)
            # offered to the model like the loop's own tools
            assert "read_memory" in {
                t["function"]["name"] for t in registry.offered({"memo_hint": ""})
            }
            # an unknown name may be a host's tool: told once the host has lent its own
            assert not any("'nope' not found" in r.getMessage() for r in caplog.records)
            assert mem.check_allowed_tools() == ["nope"]
    warnings = [r.getMessage() for r in caplog.records]
    assert sum("'nope' not found" in w for w in warnings) == 1
    assert sum("'delete_memory' changes data" in w for w in warnings) == 1
