"""Extraction replaces only what extraction made.

The scenario a bot operator lives through: an old amrita_plugin_memory install is
imported, the chat model writes memories with ``write_memory``, a person edits one of the
automatic rows, extraction is enabled and a chat session expires. Every imported memory,
every memory the chat model wrote and the row the person took over must still be there
afterwards, with their ids, tags and ages; only the rows an earlier extraction made are
replaced. Real components: the old install is built with real chromadb + SQLite
(tests/support/legacy.py), the embedder and the model are stub servers over HTTP.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from amrita_memory_pg.domain.records import ORIGINS, origin_before_recorded
from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.maintenance.legacy_import import import_legacy
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from tests.support.legacy import build_old_install
from tests.support.memory import memory_on

ALICE = ToolContext(platform="qq", user_id="10002")
KEY = ALICE.personal_key  # the old install's user_10002, migrated to this key


def _answer(*entries: tuple[str, str, int]) -> str:
    return json.dumps(
        {"memories": [{"category": c, "content": t, "importance": i} for c, t, i in entries]},
        ensure_ascii=False,
    )


async def _snapshot(pool: asyncpg.Pool, key: str) -> dict[str, dict[str, Any]]:
    rows = await pool.fetch(
        "SELECT id, content, tags, importance, source, origin, author, created_at, updated_at "
        "FROM amrita_memory.memory WHERE partition_key = $1",
        key,
    )
    return {r["id"]: dict(r.items()) for r in rows}


def _made(row: dict[str, Any]) -> tuple[str, str]:
    return (row["source"], row["origin"])


async def test_import_then_extraction_loses_no_imported_chat_written_or_person_edited_memory(
    db_dsn: str, tmp_path: Path
) -> None:
    with StubEmbeddingServer(dim=64) as embedder, ScriptedLLM() as llm:
        old = build_old_install(
            tmp_path / "bot",
            fingerprint="0" * 64,
            vector_of=lambda t: [0.5] * 64,
            partitions=[("user_10002", "user", 5)],
        )
        async with memory_on(
            db_dsn,
            tmp_path / "new",
            embedding__protocol="ollama-embed",
            embedding__model_url=embedder.url,
            embedding__model_name="bge-m3",
            embedding__max_retries=0,
            extraction__enabled=True,
            extraction__session_idle_minutes=30,
            llm__base_url=llm.base_url,
            llm__model="stub-model",
        ) as mem:
            report = await import_legacy(mem.store, old.data_dir)
            assert report.counts["memory"]["inserted"] == 5
            imported = await _snapshot(mem.pool, KEY)
            assert {_made(row) for row in imported.values()} == {("auto", "import")}

            # the chat model writes through its tool (source auto, origin llm)
            reply = json.loads(
                await mem.registries["chat"].call(
                    "write_memory",
                    {
                        "content": "用户下周要去杭州出差",
                        "tags": "travel",
                        "scope": "user",
                        "importance": "medium",
                    },
                    ALICE,
                )
            )
            assert reply["status"] == "success", reply

            # an earlier extraction's rows (origin extraction)
            now = datetime.now(UTC)
            await mem.activity.record_user_message(
                session_key=KEY, user_key=KEY, user_id="10002", group_id=None,
                text="我最近在学吉他", now=now - timedelta(hours=3),
            )  # fmt: skip
            llm.say(_answer(("event", "用户在学吉他", 4), ("preference", "用户喜欢民谣", 5)))
            first = await mem.extractor.run_expired(now=now - timedelta(hours=2))
            assert [(o.status, o.entries, o.replaced) for o in first] == [("ok", 2, 0)]

            before = await _snapshot(mem.pool, KEY)
            extracted = {i for i, r in before.items() if r["origin"] == "extraction"}
            chat_written = {i for i, r in before.items() if r["origin"] == "llm"}
            assert len(extracted) == 2 and len(chat_written) == 1
            assert {before[i]["source"] for i in extracted | chat_written} == {"auto"}

            # a person edits one extracted row (as the admin page does): it becomes theirs
            taken = sorted(extracted)[0]
            with acting(Actor("person", "web:admin")):
                edited = await mem.memories.update(KEY, taken, importance=9, by_person=True)
            assert edited is not None and edited.source == "user"

            # a new session expires: extraction replaces only its own remaining row
            await mem.activity.record_user_message(
                session_key=KEY, user_key=KEY, user_id="10002", group_id=None,
                text="吉他已经学会了三首歌", now=now - timedelta(hours=1),
            )  # fmt: skip
            llm.say(_answer(("event", "用户学会了三首吉他曲", 5)))
            second = await mem.extractor.run_expired(now=now)
            assert [(o.status, o.entries, o.replaced) for o in second] == [("ok", 1, 1)]

            after = await _snapshot(mem.pool, KEY)
            # every imported and chat-written memory is there exactly as before
            for mid in set(imported) | chat_written:
                assert after[mid] == before[mid]
            # the taken-over row stayed, as the person left it
            assert after[taken]["importance"] == 9 and _made(after[taken]) == ("user", "extraction")
            # the other extracted row was replaced by the new extraction's entry
            gone = extracted - {taken}
            assert not gone & set(after)
            new = set(after) - set(before)
            assert [after[i]["content"] for i in new] == ["用户学会了三首吉他曲"]
            assert _made(after[new.pop()]) == ("auto", "extraction")


async def test_origin_is_the_writers_kind_and_unknown_rows_are_never_replaced(
    db_dsn: str, tmp_path: Path
) -> None:
    """The column default records the transaction's actor; a row of unknown origin (from
    before origins were recorded) is kept by an extraction like any row it did not make."""
    with StubEmbeddingServer(dim=64) as embedder, ScriptedLLM() as llm:
        async with memory_on(
            db_dsn,
            tmp_path,
            embedding__protocol="ollama-embed",
            embedding__model_url=embedder.url,
            embedding__model_name="bge-m3",
            embedding__max_retries=0,
            extraction__enabled=True,
            llm__base_url=llm.base_url,
            llm__model="stub-model",
        ) as mem:
            written = {}
            for kind in ("person", "l3", "system", "import"):
                with acting(Actor(kind, "x")):  # type: ignore[arg-type]
                    record = await mem.memories.add(
                        partition_key=KEY, scope="user", content=f"{kind} 写的记忆", source="auto"
                    )
                written[record.id] = kind
            unset = await mem.memories.add(partition_key=KEY, scope="user", content="没说是谁")
            written[unset.id] = "system"
            origins = dict(
                await mem.pool.fetch(
                    "SELECT id, origin FROM amrita_memory.memory WHERE partition_key = $1", KEY
                )
            )
            assert origins == written
            # a row from before origins were recorded
            await mem.pool.execute(
                "UPDATE amrita_memory.memory SET origin = 'unknown' WHERE id = $1", unset.id
            )
            # a person's edit that changes nothing shown does not take a row over
            with acting(Actor("person", "cli:root")):
                same = await mem.memories.update(KEY, unset.id, importance=5, by_person=True)
            assert same is not None and same.source == "auto"

            await mem.activity.record_user_message(
                session_key=KEY, user_key=KEY, user_id="10002", group_id=None, text="你好",
                now=datetime.now(UTC) - timedelta(hours=2),
            )  # fmt: skip
            llm.say(_answer(("event", "打了招呼", 2)))
            (outcome,) = await mem.extractor.run_expired(now=datetime.now(UTC))
            assert (outcome.status, outcome.replaced) == ("ok", 0)
            left = {
                r["id"]
                for r in await mem.pool.fetch(
                    "SELECT id FROM amrita_memory.memory WHERE partition_key = $1", KEY
                )
            }
            assert set(written) <= left and len(left) == len(written) + 1


def test_a_backup_from_before_origins_gets_the_migrations_rule() -> None:
    assert origin_before_recorded("user") == "person"
    assert origin_before_recorded("system") == "system"
    assert origin_before_recorded("auto") == "unknown"
    assert origin_before_recorded(None) == "unknown"
    assert "extraction" in ORIGINS and "unknown" in ORIGINS


async def test_a_memory_the_chat_model_or_the_loop_changed_outlives_the_next_extraction(
    db_dsn: str, tmp_path: Path
) -> None:
    """Through the public tools: extraction writes three memories; the chat model corrects
    one (update_memory), the loop another (subconscious_update_memory); the next
    extraction replaces only the untouched one, and the history says who owns the others."""
    from tests.support.l3 import TARGET, USAGE, loop_memory

    speaker = ToolContext(platform="qq", user_id="10001")
    assert speaker.personal_key == TARGET
    with ScriptedLLM() as llm:
        llm.usage = USAGE
        async with loop_memory(db_dsn, tmp_path, llm, extraction__enabled=True) as mem:
            now = datetime.now(UTC)
            await mem.activity.record_user_message(
                session_key=TARGET, user_key=TARGET, user_id="10001", group_id=None,
                text="我住在上海，养了一只猫，在学吉他", now=now - timedelta(hours=3),
            )  # fmt: skip
            llm.say(
                _answer(("event", "用户住在上海", 5), ("event", "用户养了猫", 5),
                        ("event", "用户在学吉他", 4))
            )  # fmt: skip
            (first,) = await mem.extractor.run_expired(now=now - timedelta(hours=2))
            assert (first.status, first.entries) == ("ok", 3)
            by_content = {r["content"]: i for i, r in (await _snapshot(mem.pool, TARGET)).items()}
            city, cat, guitar = (
                by_content[c] for c in ("用户住在上海", "用户养了猫", "用户在学吉他")
            )

            # the chat model corrects one through its tool
            reply = json.loads(
                await mem.call_tool(
                    "update_memory",
                    {"id": city, "content": "用户搬到了杭州", "scope": "user"},
                    speaker,
                )
            )
            assert reply["message"] == "记忆更新成功", reply
            # the loop corrects another in a cycle
            llm.call("subconscious_update_memory", {"id": cat, "content": "用户养了两只猫"})
            llm.call("subconscious_iter_stop", {"summary": "更正了一条"})
            assert (await mem.run_cycle(TARGET)).ok

            after_edits = await _snapshot(mem.pool, TARGET)
            assert _made(after_edits[city]) == ("auto", "llm")
            assert _made(after_edits[cat]) == ("auto", "l3")
            assert _made(after_edits[guitar]) == ("auto", "extraction")
            [change] = await mem.trail.history(TARGET, city, 1)
            assert (change.op, change.actor.kind) == ("update", "llm")
            assert change.note == "归属：extraction → llm"
            [change] = await mem.trail.history(TARGET, cat, 1)
            assert (change.actor.kind, change.note) == ("l3", "归属：extraction → l3")
            # a second change by the same owner names no move
            await mem.call_tool(
                "update_memory", {"id": city, "importance": "high", "scope": "user"}, speaker
            )
            [change] = await mem.trail.history(TARGET, city, 1)
            assert change.note is None

            # the next session's extraction replaces only what extraction still owns
            await mem.activity.record_user_message(
                session_key=TARGET, user_key=TARGET, user_id="10001", group_id=None,
                text="吉他学会了三首歌", now=now - timedelta(hours=1),
            )  # fmt: skip
            llm.say(_answer(("event", "用户学会了三首吉他曲", 5)))
            (second,) = await mem.extractor.run_expired(now=now)
            assert (second.status, second.entries, second.replaced) == ("ok", 1, 1)
            final = await _snapshot(mem.pool, TARGET)
            assert final[city]["content"] == "用户搬到了杭州"
            assert final[cat]["content"] == "用户养了两只猫"
            assert guitar not in final
            assert sorted(r["content"] for r in final.values()) == [
                "用户养了两只猫", "用户学会了三首吉他曲", "用户搬到了杭州"
            ]  # fmt: skip
