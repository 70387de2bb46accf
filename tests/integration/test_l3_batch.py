"""``subconscious_batch_edit``: a whole cycle's edits in one call over real HTTP, every
operation checked by its single tool's rules first, one transaction, all or nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.domain.consolidation import CycleContext
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.tools.loop_batch import LoopBatch
from tests.support.l3 import TARGET, USAGE, add, loop_memory, tool_replies

BATCH = "subconscious_batch_edit"
OLD = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


def _ctx(*, dry_run: bool = False) -> ToolContext:
    cycle = CycleContext(cycle_id=1, target_key=TARGET, dry_run=dry_run)
    return ToolContext(platform="l3", user_id="10001", cycle=cycle)


async def _rows(mem: Memory) -> list[tuple[Any, ...]]:
    rows = await mem.pool.fetch(
        "SELECT id, content, tags, importance, source FROM amrita_memory.memory "
        "WHERE partition_key = $1 ORDER BY id",
        TARGET,
    )
    return [tuple(r.values()) for r in rows]


def _embedding(server: StubEmbeddingServer) -> dict[str, Any]:
    """The settings that embed through ``server`` (its requests are counted), no retry."""
    return {
        "embedding__protocol": "ollama-embed",
        "embedding__model_url": server.url,
        "embedding__model_name": "bge-m3",
        "embedding__max_retries": 0,
    }


async def _call(mem: Memory, ops: list[dict[str, Any]], ctx: ToolContext) -> dict[str, Any]:
    reply = json.loads(await mem.registries["consolidation"].call(BATCH, {"ops": ops}, ctx))
    assert isinstance(reply, dict)
    return reply


async def test_a_whole_cycle_goes_through_one_batch_call_over_http(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, memo_max_chars=100) as mem:
        keep = await add(mem, "用户喜欢猫，家里养了一只橘猫", importance=5, tags=("宠物",))
        dup = await add(mem, "用户喜欢猫，家里养了一只橘猫", importance=3, tags=("猫",))
        manual = await add(mem, "我的生日是三月三日", source="user", tags=("生日",))
        other = await add(mem, "用户住在上海", importance=5)
        stale = await add(mem, "临时提醒：周五交报告", importance=2, now=OLD)
        await mem.memos.replace(TARGET, "用户叫小明。" * 15)  # near the cap of 100
        ops = [
            {
                "op": "merge",
                "keep_id": keep[:8],
                "merge_ids": [dup[:8]],
                "content": "用户养了一只叫大橘的橘猫",
            },
            {"op": "delete", "id": stale[:8]},
            {"op": "tags", "id": manual[:8], "tags": "生日,待核实"},
            {"op": "importance", "id": other[:8], "importance": "high"},
            {"op": "memo", "content": "用户叫小明。"},
            {"op": "profile", "summary": "养猫的上海人", "new_lines": "养了一只叫大橘的橘猫"},
        ]
        llm.call(BATCH, {"ops": ops})
        llm.call("subconscious_iter_stop", {"summary": "一次批量整理"})

        summary = await mem.run_cycle(TARGET)

        assert summary.ok, summary.error
        assert (summary.iterations, summary.tool_calls, summary.memories_changed) == (2, 3, 5)
        first = llm.requests[0]
        offered = {t["function"]["name"] for t in first["tools"]}
        assert BATCH in offered and "subconscious_iter_stop" in offered
        assert offered.isdisjoint(
            {
                "subconscious_merge_memories",
                "subconscious_update_memory",
                "subconscious_delete_memory",
                "subconscious_rewrite_memo",
            }
        )
        system = first["messages"][0]["content"]
        assert "## 批量修改" in system and "一次 subconscious_batch_edit" in system
        assert "调用一次 subconscious_merge_memories" not in system
        # the pre-pass shows the short ids the model used
        context = tool_replies(first)[0]
        assert context["duplicate_candidates"][0][0].startswith(f"{keep[:8]}|")
        reply = tool_replies(llm.requests[1])[1]
        assert reply["status"] == "success" and reply["applied"] == 6
        assert reply["results"][0] == {"id": keep[:8], "deleted": 1}
        assert reply["results"][4] == {"chars": 6, "max_chars": 100}
        rows = {r[0]: r for r in await _rows(mem)}
        assert set(rows) == {keep, manual, other}
        assert rows[keep][1:4] == ("用户养了一只叫大橘的橘猫", ["宠物", "猫"], 5)
        assert rows[manual][1:] == ("我的生日是三月三日", ["生日", "待核实"], 5, "user")
        assert rows[other][3] == 8
        assert (await mem.memos.get(TARGET)).content == "用户叫小明。"
        profile = await mem.profiles.get(TARGET)
        assert (profile.summary, profile.lines) == ("养猫的上海人", ("养了一只叫大橘的橘猫",))
        usage = await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.token_usage WHERE cycle_id = $1", summary.cycle_id
        )
        assert usage == 2


async def test_one_invalid_operation_refuses_the_whole_batch_naming_each_bad_one(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, memo_max_chars=100) as mem:
        keep = await add(mem, "用户喜欢猫", importance=5)
        dup = await add(mem, "用户喜欢猫。", importance=3)
        manual = await add(mem, "我的生日是三月三日", source="user")
        other = await add(mem, "用户住在上海", importance=5)
        await mem.memos.replace(TARGET, "用户叫小明。" * 15)
        before = await _rows(mem)
        ctx = _ctx()
        ops: list[dict[str, Any]] = [
            {"op": "merge", "keep_id": keep, "merge_ids": [dup]},
            {"op": "delete", "id": manual},
            {"op": "importance", "id": other, "importance": "urgent"},
            {"op": "delete", "id": "deadbeef"},
            {"op": "memo", "content": "用户叫小明。"},
            {"op": "memo", "content": "又一次"},
            {"op": "explode"},
            {"op": "tags", "id": other, "tags": "城市", "content": "改写"},
            {"op": "update", "id": dup, "importance": "low"},
        ]

        reply = await _call(mem, ops, ctx)

        assert reply["status"] == "error" and "整批没有执行" in reply["message"]
        errors = {e["op"]: e["message"] for e in reply["errors"]}
        assert sorted(errors) == [2, 3, 4, 6, 7, 8, 9]
        assert "source=user" in errors[2]
        assert "importance" in errors[3] and "urgent" in errors[3]
        assert "deadbeef" in errors[4]
        assert "memo" in errors[6]
        assert "explode" in errors[7]
        assert "content" in errors[8]
        assert "第 1 个操作" in errors[9]  # merged away by operation 1
        assert await _rows(mem) == before
        assert (await mem.memos.get(TARGET)).content == "用户叫小明。" * 15
        assert ctx.cycle is not None and ctx.cycle.changed == 0

        fixed = await _call(mem, [ops[0], ops[4]], ctx)
        assert fixed["status"] == "success" and fixed["applied"] == 2
        assert {r[0] for r in await _rows(mem)} == {keep, manual, other}
        assert (await mem.memos.get(TARGET)).content == "用户叫小明。"
        assert ctx.cycle.changed == 2


async def test_a_failure_while_applying_rolls_every_operation_back(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """The batch is checked, then another process deletes a memory it names before its
    transaction: the operation fails, and the merge applied before it is undone."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        keep = await add(mem, "用户喜欢猫", importance=5, tags=("宠物",))
        dup = await add(mem, "用户喜欢猫。", importance=3, tags=("猫",))
        stale = await add(mem, "临时提醒：周五交报告", importance=2, now=OLD)
        tool = mem.registries["consolidation"].get(BATCH)
        assert tool is not None
        batch = tool.handler.__self__  # type: ignore[attr-defined]
        assert isinstance(batch, LoopBatch)
        inner = batch.transaction

        @asynccontextmanager
        async def meanwhile() -> AsyncIterator[Any]:
            await mem.pool.execute(
                "DELETE FROM amrita_memory.memory WHERE partition_key = $1 AND id = $2",
                TARGET,
                stale,
            )
            async with inner() as conn:
                yield conn

        batch.transaction = meanwhile
        before = [r for r in await _rows(mem) if r[0] != stale]
        ctx = _ctx()
        ops = [
            {"op": "merge", "keep_id": keep, "merge_ids": [dup], "content": "用户养猫"},
            {"op": "delete", "id": stale},
        ]

        reply = await _call(mem, ops, ctx)

        assert reply["status"] == "error" and reply["failed_op"] == 2
        assert reply["message"].startswith("第 2 个操作（delete）失败：未找到ID为")
        assert reply["message"].endswith("整批已回滚，什么都没有改变")
        assert await _rows(mem) == before  # the merge is undone: keep as it was, dup back
        assert ctx.cycle is not None and ctx.cycle.changed == 0
        history = await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.memory_change WHERE memory_id = ANY($1::text[]) "
            "AND op <> 'create'",
            [keep, dup],
        )
        assert history == 0


async def test_a_dry_run_batch_answers_as_if_done_and_writes_nothing(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        keep = await add(mem, "用户喜欢猫", importance=5)
        dup = await add(mem, "用户喜欢猫。", importance=3)
        other = await add(mem, "用户住在上海", importance=5)
        before = await _rows(mem)
        ctx = _ctx(dry_run=True)
        ops = [
            {"op": "merge", "keep_id": keep, "merge_ids": [dup], "content": "用户养猫"},
            {"op": "update", "id": other, "tags": "城市"},
        ]

        reply = await _call(mem, ops, ctx)
        # the list sent as JSON text (a model that encodes it twice) reads the same
        text = await mem.registries["consolidation"].call(BATCH, {"ops": json.dumps(ops)}, ctx)
        assert json.loads(text) == reply

        assert reply == {
            "status": "success",
            "dry_run": True,
            "applied": 0,
            "results": [{"id": keep, "deleted": 1}, {"id": other}],
        }
        assert await _rows(mem) == before
        assert ctx.cycle is not None and ctx.cycle.changed == 6  # 3 per dry call


async def test_the_new_texts_are_embedded_in_one_request_before_anything_is_written(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    with StubEmbeddingServer(dim=64) as server:
        async with loop_memory(db_dsn, tmp_path, llm, **_embedding(server)) as mem:
            keep = await add(mem, "用户喜欢猫", importance=5)
            dup = await add(mem, "用户喜欢猫。", importance=3)
            other = await add(mem, "用户住在上海", importance=5)
            server.reset()
            ops = [
                {"op": "merge", "keep_id": keep, "merge_ids": [dup], "content": "用户养猫"},
                {"op": "update", "id": other, "content": "用户住在上海浦东"},
            ]

            reply = await _call(mem, ops, _ctx())

            assert reply["status"] == "success", reply
            assert [r.texts for r in server.embedding_requests] == [
                ["用户养猫", "用户住在上海浦东"]
            ]

            before = await _rows(mem)
            server.fail_always = 500
            failed = await _call(
                mem,
                [{"op": "delete", "id": keep}, {"op": "update", "id": other, "content": "x"}],
                _ctx(),
            )
            assert failed["status"] == "error" and "没有写入或修改任何内容" in failed["message"]
            assert await _rows(mem) == before


async def test_a_write_op_adds_a_memory_in_the_transaction_under_the_partition_cap(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """``write`` (what write_memory does, offered in the batch instead of its own schema):
    embedded with the batch's other texts in one request, written as the loop's
    (``source=system``) in the batch's transaction; a partition at its cap refuses it and
    every operation of the batch is rolled back."""
    with StubEmbeddingServer(dim=64) as server:
        async with loop_memory(
            db_dsn, tmp_path, llm, per_session_memory_limit=3, **_embedding(server)
        ) as mem:
            keep = await add(mem, "用户喜欢猫", importance=5)
            dup = await add(mem, "用户喜欢猫。", importance=3)
            server.reset()
            write = {
                "op": "write",
                "content": "用户养了两只猫",
                "tags": "宠物",
                "importance": "high",
            }
            ops = [
                {"op": "merge", "keep_id": keep, "merge_ids": [dup], "content": "用户养猫"},
                write,
            ]

            reply = await _call(mem, ops, _ctx())

            assert reply["status"] == "success" and reply["applied"] == 2, reply
            assert [r.texts for r in server.embedding_requests] == [["用户养猫", "用户养了两只猫"]]
            new_id = reply["results"][1]["id"]
            rows = {r[0]: r[1:] for r in await _rows(mem)}
            assert set(rows) == {keep, new_id}
            assert rows[new_id] == ("用户养了两只猫", ["宠物"], 8, "system")

            await add(mem, "用户住在上海", importance=5)  # 3 of 3
            before = await _rows(mem)
            raise_it = {"op": "update", "id": keep[:8], "importance": "high"}
            full = await _call(mem, [raise_it, write], _ctx())
            assert full["status"] == "error" and full["failed_op"] == 2, full
            assert "上限（3 条）" in full["message"] and "整批已回滚" in full["message"]
            assert await _rows(mem) == before  # the update before it is undone too


async def test_the_single_edit_tools_still_run_when_called_by_name(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        keep = await add(mem, "用户喜欢猫", importance=5)
        dup = await add(mem, "用户喜欢猫。", importance=3)
        llm.call(
            "subconscious_merge_memories",
            {"keep_id": keep[:8], "merge_ids": dup[:8]},
            ("subconscious_iter_stop", {"summary": "合并"}),
        )
        summary = await mem.run_cycle(TARGET)
        assert summary.ok and summary.memories_changed == 2
        assert {r[0] for r in await _rows(mem)} == {keep}
