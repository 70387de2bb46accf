"""Lineage on the derivation paths themselves, over real HTTP where a model is involved:
extraction's entries come from the lines that say them and keep that when a rerun writes
them again; a loop merge withheld by a forget is written again by the next cycle from
what is left; a cycle that fails gives its tasks back; a dry run only looks; backup
verify reports what the ledger would remove from an old backup."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from amrita_memory_pg.domain.lineage import memory_ref
from amrita_memory_pg.maintenance.backup import create_backup
from amrita_memory_pg.maintenance.verify import verify_backup
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing_llm import ScriptedLLM
from tests.support.l3 import TARGET, USAGE, add, loop_memory, tool_replies


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


async def say(mem: Memory, text: str) -> None:
    await mem.activity.record_user_message(
        session_key=TARGET, user_key=TARGET, user_id="10001", group_id=None, text=text
    )


def extracted(*entries: str) -> str:
    return json.dumps(
        {"memories": [{"category": "preference", "content": e, "importance": 6} for e in entries]},
        ensure_ascii=False,
    )


async def sources(mem: Memory, memory_id: str) -> list[tuple[str, str | None]]:
    walked = await mem.cases.forgetting.lineage_of(memory_ref(TARGET, memory_id))
    return [(r.ref.kind, r.body) for r in walked.made_from if r.depth == 1]


async def test_extracted_memories_come_from_the_lines_that_say_them_and_keep_it_on_a_rerun(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, extraction__enabled=True) as mem:
        await say(mem, "我养了一只橘猫，叫团子")
        await say(mem, "今天好热")
        llm.say(extracted("用户养了一只叫团子的橘猫"))
        assert (await mem.extractor.extract(TARGET, trigger="cli")).status == "ok"
        first = await mem.pool.fetchval("SELECT id FROM amrita_memory.memory")
        assert await sources(mem, first) == [("chat_line", "我养了一只橘猫，叫团子")]

        # the next run writes the same entry again (a new row) from new lines
        await say(mem, "周末去爬山")
        llm.say(extracted("用户养了一只叫团子的橘猫", "用户周末爬山"))
        assert (await mem.extractor.extract(TARGET, trigger="cli")).status == "ok"
        rows = {
            r["content"]: r["id"]
            for r in await mem.pool.fetch("SELECT id, content FROM amrita_memory.memory")
        }
        again = rows["用户养了一只叫团子的橘猫"]
        assert again != first
        assert await sources(mem, again) == [("chat_line", "我养了一只橘猫，叫团子")]
        assert await sources(mem, rows["用户周末爬山"]) == [("chat_line", "周末去爬山")]


async def test_a_withheld_merge_is_written_again_by_the_next_cycle_from_what_is_left(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        cat = await add(mem, "用户养猫", importance=5)
        nuts = await add(mem, "用户对花生过敏", importance=7)
        llm.call(
            "subconscious_merge_memories",
            {"keep_id": cat, "merge_ids": nuts, "content": "用户养猫，对花生过敏"},
        )
        llm.call("subconscious_iter_stop", {"summary": "合并"})
        assert (await mem.run_cycle(TARGET)).ok
        assert {r[0] for r in await sources(mem, cat)} == {"memory"}

        # forgetting the merged fact by its (gone) id withholds the merged memory
        done = await mem.cases.forgetting.forget(
            TARGET, [nuts], requested_by="test", by_person=True
        )
        assert [r.id for r in done.withheld] == [cat]
        assert await mem.memories.count(TARGET) == 0

        # a failing cycle gives its task back; a dry run only looks
        llm.reset()
        llm.fail(500)
        llm.fail(500)
        llm.fail(500)
        assert not (await mem.run_cycle(TARGET)).ok
        assert (
            await mem.pool.fetchval("SELECT claimed_by_cycle FROM amrita_memory.rederive_task")
            is None
        )
        llm.reset()
        llm.call("subconscious_iter_stop", {"summary": "看看"})
        assert (await mem.run_cycle(TARGET, dry_run=True)).ok
        listed = tool_replies(llm.requests[0])[0]["rederive"]
        assert len(listed) == 1 and "去掉「用户对花生过敏」" in listed[0]
        assert (
            await mem.pool.fetchval("SELECT claimed_by_cycle FROM amrita_memory.rederive_task")
            is None
        )

        task_id = await mem.pool.fetchval("SELECT id FROM amrita_memory.rederive_task")
        llm.reset()
        llm.call("subconscious_rederive", {"task_id": task_id, "content": "用户养猫"})
        llm.call("subconscious_iter_stop", {"summary": "重写"})
        assert (await mem.run_cycle(TARGET)).ok
        written = tool_replies(llm.requests[1])[-1]
        assert written["status"] == "success"
        rows = await mem.pool.fetch("SELECT id, content, source FROM amrita_memory.memory")
        assert [(r["content"], r["source"]) for r in rows] == [("用户养猫", "system")]
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.rederive_task") == 0


async def test_backup_verify_reports_what_the_ledger_removes_from_an_old_backup(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        fact = await add(mem, "用户对花生过敏", importance=7)
        await add(mem, "用户养猫", importance=5)
        old = await create_backup(mem.store, reason="manual")
        clean = await verify_backup(mem.store, old.stem)
        assert clean.ok and clean.ledger == {} and clean.ledger_entries == 0
        await mem.cases.forgetting.forget(TARGET, [fact], requested_by="test", by_person=True)
        report = await verify_backup(mem.store, old.stem)
        assert report.ok  # the backup is intact; it holds what was forgotten since
        assert report.ledger_entries == 1
        assert [(kind, n >= 1) for kind, n in report.ledger.values()] == [("forget", True)]
        fresh = await create_backup(mem.store, reason="manual")
        assert (await verify_backup(mem.store, fresh.stem)).ledger == {}


async def test_a_batch_edit_records_the_same_lineage_as_the_single_tools(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """The batched edit tool applies its operations through the same use cases inside the
    cycle's derivation: its merge names the merged memory, its memo sentence the fact."""
    async with loop_memory(db_dsn, tmp_path, llm, memo_max_chars=200) as mem:
        cat = await add(mem, "用户养猫", importance=5)
        nuts = await add(mem, "用户对花生过敏", importance=7)
        llm.call(
            "subconscious_batch_edit",
            {
                "ops": [
                    {
                        "op": "merge",
                        "keep_id": cat[:8],
                        "merge_ids": [nuts[:8]],
                        "content": "用户养猫，对花生过敏",
                    },
                    {"op": "memo", "content": "用户对花生过敏。"},
                ]
            },
        )
        llm.call("subconscious_iter_stop", {"summary": "合并"})
        assert (await mem.run_cycle(TARGET)).ok
        assert tool_replies(llm.requests[1])[-1]["status"] == "success"
        walked = await mem.cases.forgetting.lineage_of(memory_ref(TARGET, nuts))
        assert {(r.ref.kind, r.ref.id) for r in walked.used_by} >= {("memory", cat)}
        assert "memo_sentence" in {r.ref.kind for r in walked.used_by}
