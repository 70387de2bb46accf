"""A pause means paused on every automatic path, on a real PostgreSQL.

Every tool of every audience (the chat's, the L3 loop's, the chat tools the loop borrows)
and every automatic entry point (a cycle started by the service, the scheduler or the
CLI; extraction; the per-turn injection) is walked against a paused personal partition
and a paused group partition: nothing of theirs is read out (a sentinel written into
their memories, memo, profile and chat log never appears) and nothing of theirs is
written (every row keyed by them is unchanged). The database itself refuses automatic
memo and profile writes (SQLSTATE AMZ01, pause.sql), while a person still manages a
paused partition.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from amrita_memory_pg.domain.consolidation import CycleContext
from amrita_memory_pg.domain.errors import MemoryPaused
from amrita_memory_pg.domain.profile import ProfileActor, make_edit
from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.consolidation import utcnow
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from tests.support.cli import run_cli
from tests.support.l3 import GROUP, TARGET, USAGE, loop_memory

SECRET = "暗号-7Q3X"
ROOT = frozenset({"superuser"})
PRIVATE = ToolContext(platform="qq", user_id="10001", roles=ROOT)
IN_GROUP = ToolContext(platform="qq", user_id="10001", group_id="777", roles=ROOT)
PAUSED = [TARGET, GROUP]
#: columns that tie a row to a partition, in any table of the schema
KEY_COLUMNS = ("partition_key", "target_key", "session_key", "scope_key", "user_key")
#: bookkeeping an extraction of a paused scope keeps on purpose (its "rejected" run and
#: the lines marked read: asserted in test_trail.py) — no memory is read out or written
EXTRACTION_BOOKKEEPING = frozenset({"extraction_run", "chat_log"})
#: the scheduler still plans a paused target's next window (as after a quiet cycle)
SCHEDULER_BOOKKEEPING = frozenset({"l3_state"})
BOOKKEEPING = EXTRACTION_BOOKKEEPING | SCHEDULER_BOOKKEEPING

#: the chat-side tools that act on the speaker's (paused) partitions: each says «paused»
CHAT_PARTITION_TOOLS = {
    "write_memory",
    "read_memory",
    "update_memory",
    "delete_memory",
    "forget_memory",
    "list_memory",
    "read_memo",
    "append_memo",
    "update_memo",
    "read_profile",
    "memory_load_context",
    "memory_unload_context",
    "memory_write",
    "memory_delete",
    "knowledge_suggest",
}


def chat_args(scope: str, memory_id: str, other: str) -> dict[str, dict[str, Any]]:
    """One plausible call of every chat tool (scope: user in private, group in a group)."""
    return {
        "write_memory": {"content": "新事实", "tags": "t", "importance": "low", "scope": scope},
        "read_memory": {"query": SECRET, "scope": scope},
        "update_memory": {"id": memory_id, "content": "改写", "scope": scope},
        "delete_memory": {"id": memory_id, "scope": scope},
        "forget_memory": {"id": memory_id, "scope": scope},
        "list_memory": {"scope": scope},
        "read_memo": {},
        "append_memo": {"content": "追加一句"},
        "update_memo": {"content": "整篇替换"},
        "knowledge_list": {},
        "knowledge_read": {"kid": "k1"},
        "knowledge_search": {"query": SECRET},
        "knowledge_suggest": {
            "action": "create",
            "title": "标题",
            "summary": "摘要",
            "body": "正文",
            "reason": "理由",
        },
        "read_profile": {},
        "memory_load_context": {"scope": other},
        "memory_unload_context": {"scope": other},
        "memory_write": {"id": memory_id, "content": "改写", "scope": scope},
        "memory_delete": {"id": memory_id, "scope": scope},
    }


def loop_args(memory_id: str, other_id: str) -> dict[str, dict[str, Any]]:
    """One plausible call of every tool the loop is offered (its own and borrowed)."""
    return {
        "subconscious_read_memory": {"query": SECRET},
        "subconscious_write_memory": {"content": "新事实", "tags": "t", "importance": "low"},
        "subconscious_update_memory": {"id": memory_id, "content": "改写"},
        "subconscious_delete_memory": {"id": memory_id},
        "subconscious_merge_memories": {"keep_id": memory_id, "merge_ids": other_id},
        "subconscious_batch_edit": {
            "ops": [
                {"op": "merge", "keep_id": memory_id, "merge_ids": [other_id]},
                {"op": "memo", "content": "压缩后的备忘录"},
                {"op": "profile", "summary": "新摘要", "new_lines": "新行"},
            ]
        },
        "subconscious_list_memory": {},
        "subconscious_duplicate_helper": {},
        "subconscious_iter_stop": {"summary": "结束"},
        "subconscious_read_sessions": {},
        "subconscious_read_chat_context": {},
        "subconscious_send_to_user": {"intent": "问候"},
        "subconscious_get_memory_stats": {},
        "subconscious_get_context": {},
        "subconscious_read_memo": {},
        "subconscious_rewrite_memo": {"content": "压缩后的备忘录"},
        "subconscious_knowledge_list": {},
        "subconscious_knowledge_read": {"kid": "k1"},
        "subconscious_knowledge_create": {"title": "标题", "summary": "摘要", "body": "正文"},
        "subconscious_knowledge_update": {"kid": "k1", "summary": "新摘要"},
        "subconscious_knowledge_delete": {"kid": "k1"},
        "subconscious_knowledge_search": {"query": SECRET},
        "subconscious_read_suggestions": {},
        "subconscious_get_profile": {},
        "subconscious_update_profile": {"summary": "新摘要", "new_lines": "新行"},
        "subconscious_rederive": {"task_id": 1, "content": "重写"},
        # borrowed chat tools ([subconscious] allowed_tools), run in the target's context
        "read_memory": {"query": SECRET, "scope": "user"},
        "list_memory": {"scope": "user"},
        "read_memo": {},
        "read_profile": {},
    }


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


def everything(db_dsn: str, tmp_path: Path, llm: ScriptedLLM) -> Any:
    return loop_memory(
        db_dsn,
        tmp_path,
        llm,
        subconscious__enable_memory_compress=True,
        subconscious__allow_send_to_user=True,
        subconscious__enable_knowledge=True,
        subconscious__allowed_tools=["read_memory", "list_memory", "read_memo"],
        extraction__enabled=True,
        injection__enabled=True,
        profile__inject_summary=True,
    )


async def seed(mem: Memory) -> dict[str, list[str]]:
    """Two memories, a memo and (personal) a profile and chat lines per paused partition,
    each carrying the sentinel; written as a person, before the pause."""
    ids: dict[str, list[str]] = {}
    with acting(Actor("person", "root")):
        for key, scope in ((TARGET, "user"), (GROUP, "group")):
            ids[key] = [
                (
                    await mem.memories.add(
                        partition_key=key, scope=scope, content=f"{SECRET} 第{n}条", tags=["t"]
                    )
                ).id
                for n in (1, 2)
            ]
            await mem.memos.replace(key, f"备忘录 {SECRET}")
            await mem.activity.record_user_message(
                session_key=key,
                user_key=TARGET,
                user_id="10001",
                group_id="777" if key == GROUP else None,
                text=f"聊天 {SECRET}",
            )
        await mem.profiles.edit(
            TARGET,
            make_edit(f"画像 {SECRET}", f"行 {SECRET}", None, None),
            ProfileActor("cli", "root"),
        )
    for key in PAUSED:
        await mem.trail.pause(key, by="person:root")
    return ids


async def snapshot(pool: Any, skip: frozenset[str] = frozenset()) -> dict[str, tuple[int, str]]:
    """Per table and key column: how many rows the paused partitions have, and a digest."""
    columns = await pool.fetch(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = 'amrita_memory' AND column_name = ANY($1::text[]) "
        "AND table_name IN (SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = 'amrita_memory' AND table_type = 'BASE TABLE')",
        list(KEY_COLUMNS),
    )
    seen: dict[str, tuple[int, str]] = {}
    for row in columns:
        table, column = row["table_name"], row["column_name"]
        if table in skip:
            continue
        count, digest = await pool.fetchrow(
            f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "
            f'FROM amrita_memory."{table}" t WHERE t."{column}" = ANY($1::text[])',
            PAUSED,
        )
        seen[f"{table}.{column}"] = (count, digest)
    assert "memory.partition_key" in seen and "memo.partition_key" in seen
    return seen


def is_paused(reply: dict[str, Any]) -> bool:
    return reply.get("status") == "paused" or reply.get("paused") is True


async def test_every_tool_of_every_audience_neither_reads_nor_writes_a_paused_partition(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with everything(db_dsn, tmp_path, llm) as mem:
        ids = await seed(mem)
        before = await snapshot(mem.pool)

        chat = mem.registries["chat"]
        for ctx, scope, key, other in (
            (PRIVATE, "user", TARGET, "group:777"),
            (IN_GROUP, "group", GROUP, "user"),
        ):
            calls = chat_args(scope, ids[key][0], other)
            assert set(chat.names()) <= set(calls), "a chat tool the walk does not call"
            for name in chat.names():
                text = await mem.call_tool(name, calls[name], ctx)
                assert SECRET not in text, (name, text)
                if name in CHAT_PARTITION_TOOLS:
                    reply = json.loads(text)
                    assert is_paused(reply), (name, scope, reply)
                    assert key in reply["message"] or TARGET in reply["message"], reply
                    assert "暂停" in reply["message"]

        loop = mem.registries["consolidation"]
        for n, target in enumerate(PAUSED, start=1):
            cycle = CycleContext(cycle_id=n, target_key=target)
            ctx = ToolContext(platform="qq", user_id="subconscious", cycle=cycle)
            calls = loop_args(*ids[target])
            assert set(loop.names()) <= set(calls), "a loop tool the walk does not call"
            for name in loop.names():
                text = await loop.call(name, calls[name], ctx)
                assert SECRET not in text, (name, text)
                reply = json.loads(text)
                if name == "subconscious_iter_stop":
                    continue  # ends the cycle; reads and writes nothing of the target
                assert reply["status"] == "paused", (name, reply)
                assert target in reply["message"] and "暂停" in reply["message"]
            assert cycle.changed == 0

        assert await snapshot(mem.pool) == before
        assert llm.requests == []


async def test_no_automatic_entry_point_reads_or_writes_a_paused_partition(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with everything(db_dsn, tmp_path, llm) as mem:
        await seed(mem)
        before = await snapshot(mem.pool, SCHEDULER_BOOKKEEPING)

        # the loop, however started: the service (/memory dmn), the scheduler, a dry run
        for summary in (
            await mem.run_cycle(TARGET),
            await mem.run_cycle(GROUP, dry_run=True),
            (await mem.scheduling.run_cycle(TARGET))[0],
        ):
            assert summary.ok and summary.cycle_id == 0, summary
            assert "paused" in (summary.summary or "")
        # injection: the per-turn block of the private chat and of the group chat
        for ctx in (PRIVATE, IN_GROUP):
            block = await mem.memory_block(ctx, message=SECRET)
            assert SECRET not in block
        inspected = await mem.inspect(GROUP, user_id="10001", message=SECRET)
        assert SECRET not in inspected.text
        assert await snapshot(mem.pool, SCHEDULER_BOOKKEEPING) == before

        # extraction: rejected before the model is asked; only its own bookkeeping moves
        quiet = await snapshot(mem.pool, BOOKKEEPING)
        for key in PAUSED:
            outcome = await mem.extractor.extract(key)
            assert outcome.status == "rejected" and "paused" in (outcome.reason or "")
        assert await snapshot(mem.pool, BOOKKEEPING) == quiet
        assert llm.requests == []

        # the CLI's consolidate: no cycle, no model call, says why
        env = {
            "DATABASE_URL": db_dsn,
            "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "cli"),
            "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
            "AMRITA_MEMORY_SUBCONSCIOUS__PROMPT_DIR": str(tmp_path / "config"),
            "LLM_BASE_URL": llm.base_url,
            "LLM_MODEL": "stub",
        }
        done = run_cli("consolidate", "--target", TARGET, env=env)
        assert done.returncode == 0, done.stderr
        assert f"cycle 0 of {TARGET}: ok" in done.stdout and "paused" in done.stdout
        assert llm.requests == []
        assert await snapshot(mem.pool, BOOKKEEPING) == quiet
        cycles = await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.consolidation_cycle WHERE target_key = ANY($1)",
            PAUSED,
        )
        assert cycles == 0


async def test_the_database_refuses_automatic_memo_and_profile_writes_and_people_still_manage(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with everything(db_dsn, tmp_path, llm) as mem:
        await seed(mem)
        edit = make_edit("机器写的摘要", "机器写的行", None, None)
        for kind in ("llm", "extraction", "l3"):
            with acting(Actor(kind, "x")):  # type: ignore[arg-type]
                with pytest.raises(MemoryPaused):
                    await mem.memos.replace(TARGET, "机器改写")
                with pytest.raises(MemoryPaused):
                    await mem.memos.append(GROUP, "机器追加")
                with pytest.raises(MemoryPaused):
                    await mem.profiles.edit(TARGET, edit, ProfileActor("loop", cycle_id=1))
        # straight at the table too: the trigger, not the Python, refuses it
        conn = await asyncpg.connect(db_dsn)
        try:
            async with conn.transaction():
                await conn.execute("SELECT set_config('amrita_memory.actor', 'llm:x', true)")
                with pytest.raises(asyncpg.PostgresError) as refused:
                    await conn.execute(
                        "DELETE FROM amrita_memory.memo WHERE partition_key = $1", TARGET
                    )
                assert refused.value.sqlstate == "AMZ01"
                raise _Rollback
        except _Rollback:
            pass
        finally:
            await conn.close()
        assert (await mem.memos.get(TARGET)).content == f"备忘录 {SECRET}"
        assert (await mem.profiles.get(TARGET)).summary == f"画像 {SECRET}"

        # a person (the page, the CLI, /memory) still manages a paused partition
        with acting(Actor("person", "root")):
            await mem.memos.replace(TARGET, "人工改写")
            await mem.profiles.edit(TARGET, edit, ProfileActor("cli", "root"))
        assert (await mem.memos.get(TARGET)).content == "人工改写"
        assert (await mem.profiles.get(TARGET)).summary == "机器写的摘要"
        # a proactive message the loop queued before the pause waits for the resume
        await mem.consolidation.queue_message(TARGET, None, f"问候 {SECRET}", now=utcnow())
        assert await mem.pending_for(PRIVATE) == []
        sent: list[str] = []

        async def send(key: str, text: str) -> None:
            sent.append(text)

        assert await mem.send_pending(TARGET, send) is None and sent == []
        # and after a resume the chat tools work again, and the message is delivered
        assert await mem.trail.resume(TARGET)
        assert [m.content for m in await mem.pending_for(PRIVATE)] == [f"问候 {SECRET}"]
        reply = json.loads(await mem.call_tool("append_memo", {"content": "恢复后"}, PRIVATE))
        assert reply["status"] == "success", reply


class _Rollback(Exception):
    """Ends a transaction block without committing."""
