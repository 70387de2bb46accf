"""Proof that a forget reaches everything derived: a fact is planted in a chat, the product
derives from it through every path — extraction from the chat lines, an L3 merge, a
profile line and summary, a distilled knowledge entry, a memo rewrite, the loop's cycle
summary — with a scripted model over real HTTP; the user asks the chat model to forget it;
the next cycle writes again what was made from it and other facts; then neither any table
nor a fresh pg_dump of the schema holds its text, the unrelated rows are as they were, and
a backup taken before the forget restores without it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.maintenance.backup import create_backup, pg_tool
from amrita_memory_pg.maintenance.restore import restore_backup
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.admin import AdminRepository
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from tests.support.l3 import TARGET, USAGE, add, loop_memory, tool_replies

#: the planted fact's words: no unrelated row contains either
MARK = "ZQX7"
FACT_WORDS = ("花生过敏", MARK)
SPEAKER = ToolContext(platform="qq", user_id="10001")


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


async def every_row(mem: Memory) -> str:
    """Every row of every table of the schema, as text."""
    tables = [
        r["tablename"]
        for r in await mem.pool.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'amrita_memory' ORDER BY 1"
        )
    ]
    parts: list[str] = []
    for table in tables:
        rows = await mem.pool.fetch(f"SELECT t::text AS row FROM amrita_memory.{table} t")
        parts.extend(f"{table}: {r['row']}" for r in rows)
    return "\n".join(parts)


def fresh_dump(dsn: str) -> str:
    """A plain-text pg_dump of the schema, data included."""
    done = subprocess.run(
        [pg_tool("pg_dump"), "--schema=amrita_memory", "--no-owner", dsn],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def hits(text: str) -> list[str]:
    return [line[:160] for line in text.splitlines() if any(w in line for w in FACT_WORDS)]


async def unrelated(mem: Memory) -> list[tuple[str, str]]:
    rows = await mem.pool.fetch(
        "SELECT id, content FROM amrita_memory.memory WHERE content NOT LIKE '%花生%' ORDER BY id"
    )
    return [(r["id"], r["content"]) for r in rows]


async def chat(mem: Memory, text: str, *, bot: bool = False) -> None:
    if bot:
        await mem.activity.record_bot_message(
            session_key=TARGET, bot_id="bot", group_id=None, text=text
        )
    else:
        await mem.activity.record_user_message(
            session_key=TARGET, user_key=TARGET, user_id="10001", group_id=None, text=text
        )


async def call(mem: Memory, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(await mem.call_tool(name, arguments, SPEAKER))
    return reply


async def test_a_forgotten_fact_leaves_no_trace_in_any_table_dump_or_restored_backup(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(
        db_dsn,
        tmp_path,
        llm,
        extraction__enabled=True,
        profile__inject_summary=True,
        memo_max_chars=200,
    ) as mem:
        # -- the chat: the fact, and unrelated things
        await chat(mem, f"我对花生过敏（{MARK}），别给我推荐花生酱")
        await chat(mem, "好的，记住了", bot=True)
        await chat(mem, "我周六一般去爬山")
        cat = await add(mem, "用户喜欢猫", importance=5, category="preference")

        # -- extraction: the session's lines become memories (a scripted model over HTTP)
        llm.say(
            json.dumps(
                {
                    "memories": [
                        {
                            "category": "preference",
                            "content": f"用户对花生过敏{MARK}",
                            "importance": 8,
                        },
                        {"category": "event", "content": "用户周六爬山", "importance": 5},
                    ]
                },
                ensure_ascii=False,
            )
        )
        outcome = await mem.extractor.extract(TARGET, trigger="cli")
        assert outcome.status == "ok", outcome.reason
        extracted = {
            r["content"]: r["id"]
            for r in await mem.pool.fetch("SELECT id, content FROM amrita_memory.memory")
        }
        fact, hike = extracted[f"用户对花生过敏{MARK}"], extracted["用户周六爬山"]
        # the chat model wrote the same fact again, in its own words
        duplicate = await add(mem, f"用户花生过敏{MARK}，吃了会起疹子", importance=7)
        await call(mem, "read_memory", {"query": f"花生过敏{MARK}", "scope": "user"})
        async with mem.pool.acquire() as conn:  # a page edit the admin audit copied
            await AdminRepository(mem.pool).audit(
                actor="alice",
                role="admin",
                client=None,
                action="memory.edit",
                partition_key=TARGET,
                target_id=duplicate,
                detail={"after": {"content": f"用户花生过敏{MARK}，吃了会起疹子"}},
                ok=True,
                at=await conn.fetchval("SELECT now()"),
            )

        # -- an L3 cycle derives from it through every path
        merged = f"用户对花生过敏{MARK}，吃了会起疹子"
        llm.call(
            "subconscious_merge_memories",
            {"keep_id": duplicate, "merge_ids": fact, "content": merged},
        )
        llm.call(
            "subconscious_update_profile",
            {
                "summary": f"周六爱爬山；对花生过敏{MARK}",
                "new_lines": f"对花生过敏{MARK}\n周六爱爬山",
            },
        )
        llm.call(
            "subconscious_knowledge_create",
            {
                "title": "花生过敏须知",
                "summary": f"花生过敏{MARK}的人要避开花生酱",
                "body": "避开花生酱",
            },
        )
        llm.call("subconscious_rewrite_memo", {"content": f"用户喜欢猫。用户对花生过敏{MARK}。"})
        llm.call("subconscious_iter_stop", {"summary": f"合并了花生过敏{MARK}的两条记忆"})
        first = await mem.run_cycle(TARGET)
        assert first.ok, first.error
        assert all(r["status"] == "success" for r in tool_replies(llm.requests[-1])[1:]), (
            tool_replies(llm.requests[-1])
        )
        # every derived row records what it was made from (one walk, both ways)
        lineage = await mem.cases.forgetting.lineage_of_memory(TARGET, duplicate)
        made_by = {(r.ref.kind, r.made_by) for r in lineage.used_by}
        assert {
            ("profile_line", "l3"),
            ("profile_summary", "l3"),
            ("knowledge", "l3"),
            ("memo_sentence", "l3"),
        } <= made_by
        assert {(r.ref.kind, r.ref.id) for r in lineage.made_from} >= {("memory", fact)}
        before_text = await every_row(mem)
        assert hits(before_text)  # the fact is everywhere now
        kept_before = await unrelated(mem)
        assert {c for _i, c in kept_before} == {"用户喜欢猫", "用户周六爬山"}

        backup = await create_backup(mem.store, reason="manual")

        # -- the user asks; the chat model finds it, then forgets it
        await chat(mem, f"忘掉我对花生过敏{MARK}这件事")
        found = await call(mem, "forget_memory", {"query": "花生过敏", "scope": "user"})
        assert found["status"] == "confirm", found
        assert found["candidates"][0]["id"] == duplicate
        done = await call(mem, "forget_memory", {"id": duplicate, "scope": "user"})
        assert done["status"] == "success", done
        assert done["forgotten"]["derived_deleted"] >= 3  # the line, the entry, the sentence
        assert done["forgotten"]["derived_withheld"] == 1  # the summary: also made from 爬山
        assert done["forgotten"]["chat_lines"] == 2  # the first line and the request

        # until the loop writes it again, the withheld summary is used nowhere
        block = await mem.memory_block(SPEAKER, "花生")
        assert not hits(block)
        searched = await call(mem, "read_memory", {"query": "花生", "scope": "user"})
        assert searched["ids"][0] and not hits(json.dumps(searched, ensure_ascii=False))

        # -- the next cycle derives the summary again from what is left
        task_id = await mem.pool.fetchval("SELECT id FROM amrita_memory.rederive_task")
        llm.reset()
        llm.call("subconscious_rederive", {"task_id": task_id, "content": "周六爱爬山"})
        llm.call("subconscious_iter_stop", {"summary": "重写了画像摘要"})
        second = await mem.run_cycle(TARGET)
        assert second.ok, second.error
        context = tool_replies(llm.requests[0])[0]
        assert len(context["rederive"]) == 1
        assert tool_replies(llm.requests[1])[-1]["written"] == "profile_summary"

        # -- no table, no dump holds it; the unrelated rows are as they were
        assert hits(await every_row(mem)) == []
        assert hits(fresh_dump(db_dsn)) == []
        assert await unrelated(mem) == kept_before
        assert (
            await mem.pool.fetchval(
                "SELECT summary FROM amrita_memory.profile WHERE partition_key = $1", TARGET
            )
            == "周六爱爬山"
        )
        assert (
            await mem.pool.fetchval(
                "SELECT content FROM amrita_memory.memo WHERE partition_key = $1", TARGET
            )
            == "用户喜欢猫。"
        )
        assert (
            await mem.pool.fetchval(
                "SELECT count(*) FROM amrita_memory.chat_log WHERE text = '我周六一般去爬山'"
            )
            == 1
        )
        ledger = await mem.cases.forgetting.ledger()
        assert [(e.kind, e.memories) for e in ledger] == [("forget", 2)]  # it and the merged one
        assert ledger[0].requested_by == "chat" and ledger[0].counts["memory"] >= 1
        assert cat in {i for i, _c in await unrelated(mem)} and hike in dict(kept_before)

        # -- a backup from before the forget comes back without it
        report = await restore_backup(mem.store, backup.jsonl_path)
        assert report.ledger and all(kind == "forget" for kind, _n in report.ledger.values())
        assert hits(await every_row(mem)) == []
        assert hits(fresh_dump(db_dsn)) == []
        assert await unrelated(mem) == kept_before
        report = await restore_backup(mem.store, backup.dump_path)
        assert hits(await every_row(mem)) == []
        assert await unrelated(mem) == kept_before
        # the ledger came through both restores once (the store's and the newest backup's
        # copy of the same entry are one)
        assert [e.kind for e in await mem.cases.forgetting.ledger()] == ["forget"]
