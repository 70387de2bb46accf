"""The trail's row-level triggers (sql/functions/trail.sql): a statement under the writer's
flag (amrita_memory.history_by_writer) queues no trigger work, an update of no shown field
calls nothing, and every plain-SQL path (multi-row INSERT / UPDATE / DELETE, merge hint,
pause, bounds, retention, access-log follow-up) writes the rows its rule says. A JSONL
restore carrying the history clears and copies the memories under the flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import pytest

from amrita_memory_pg.maintenance.backup import create_backup, read_header
from amrita_memory_pg.maintenance.restore import load_jsonl
from amrita_memory_pg.storage.pg.database import register_vector_codec
from tests.support.memory import memory_on

TRIGGERS = ("trail_memory_insert", "trail_memory_update", "trail_memory_delete")
#: pg_trigger.tgtype bit: FOR EACH ROW
ROW_BIT = 1


async def _seed(conn: asyncpg.Connection, n: int, parts: int) -> None:
    """``n`` memories in ``parts`` partitions, by a person, one INSERT ... SELECT."""
    async with conn.transaction():
        await conn.execute("SELECT set_config('amrita_memory.actor', 'person:7', true)")
        await conn.execute(
            "INSERT INTO amrita_memory.memory (id, partition_key, scope, content, tags, importance,"
            " category, embedding, embed_fingerprint)"
            " SELECT lpad(to_hex(g), 32, '0'), 'P' || (g % $2), 'user', 'fact ' || g,"
            "        ARRAY['t' || (g % 3)], 5, CASE WHEN g % 2 = 0 THEN 'event' END,"
            "        '[1,0,0]'::vector, 'fp'"
            "   FROM generate_series(1, $1) g",
            n,
            parts,
        )


async def _trail_function_calls(conn: asyncpg.Connection) -> int:
    """Calls, in this transaction, of the functions the trail triggers execute."""
    value = await conn.fetchval(
        "SELECT coalesce(sum(f.calls), 0) FROM pg_stat_xact_user_functions f"
        " WHERE f.funcid IN (SELECT t.tgfoid FROM pg_trigger t"
        "                     WHERE t.tgrelid = 'amrita_memory.memory'::regclass"
        "                       AND t.tgname = ANY($1::text[]))",
        list(TRIGGERS),
    )
    return int(value)


async def test_the_trail_triggers_are_row_level_without_transition_tables(
    conn: asyncpg.Connection,
) -> None:
    rows = await conn.fetch(
        "SELECT tgname, tgtype, tgoldtable, tgnewtable, tgfoid::regproc::text AS fn"
        " FROM pg_trigger WHERE tgrelid = 'amrita_memory.memory'::regclass"
        " AND tgname = ANY($1::text[]) ORDER BY tgname",
        list(TRIGGERS),
    )
    assert [r["tgname"] for r in rows] == sorted(TRIGGERS)
    for row in rows:
        assert row["tgtype"] & ROW_BIT, row["tgname"]
        assert (row["tgoldtable"], row["tgnewtable"]) == (None, None), row["tgname"]
        assert row["fn"].endswith("record_memory_change_row_v1")


async def test_the_writer_flag_and_an_unshown_update_queue_no_trigger_work(
    conn: asyncpg.Connection,
) -> None:
    await _seed(conn, 200, 4)
    await conn.execute("SET track_functions = 'pl'")
    async with conn.transaction():
        await conn.execute("SELECT set_config('amrita_memory.history_by_writer', 'on', true)")
        await conn.execute("UPDATE amrita_memory.memory SET content = content || ' (edited)'")
        await conn.execute("DELETE FROM amrita_memory.memory WHERE partition_key = 'P0'")
        await conn.execute("SELECT set_config('amrita_memory.history_by_writer', '', true)")
        assert await _trail_function_calls(conn) == 0
        # an embedding / token rewrite of every row (re-embed, backfill) changes nothing shown:
        # trail_v3's statement trigger still ran its function once for the statement
        await conn.execute(
            "UPDATE amrita_memory.memory SET embedding = '[0,1,0]'::vector, search_tokens = NULL"
        )
        assert await _trail_function_calls(conn) == 0
        # without the flag: one call and one history row per changed memory
        changed = await conn.execute(
            "UPDATE amrita_memory.memory SET importance = 6 WHERE partition_key = 'P1'"
        )
        assert changed == "UPDATE 50"
        assert await _trail_function_calls(conn) == 50
    counts = await conn.fetch(
        "SELECT op, count(*) AS n FROM amrita_memory.memory_change GROUP BY op ORDER BY op"
    )
    assert [(r["op"], r["n"]) for r in counts] == [("create", 200), ("update", 50)]


async def _scenario(conn: asyncpg.Connection) -> dict[str, Any]:
    """Plain-SQL writes over every trail rule; returns what the trail recorded."""
    await _seed(conn, 40, 4)
    # the access log of four memories (two will be deleted, two moved)
    await conn.execute(
        "INSERT INTO amrita_memory.memory_access (partition_key, memory_id, at, surface)"
        " SELECT m.partition_key, m.id, now(), 'tool' FROM amrita_memory.memory m,"
        f" generate_series(1, 2) WHERE m.id IN {ids(1, 5, 2, 6)}"
    )

    async def tx(actor: str, sql: str, **settings: str) -> None:
        async with conn.transaction():
            await conn.execute("SELECT set_config('amrita_memory.actor', $1, true)", actor)
            await conn.execute("SELECT set_config('amrita_memory.history_keep', '3', true)")
            await conn.execute(
                "SELECT set_config('amrita_memory.history_keep_deleted_days', '10', true)"
            )
            for name, value in settings.items():
                await conn.execute(
                    "SELECT set_config($1, $2, true)", f"amrita_memory.{name}", value
                )
            await conn.execute(sql)

    # a content edit of a partition, a tags-only edit ('tag'), an unshown update (nothing)
    await tx("llm:QQ_1", "UPDATE amrita_memory.memory SET content = content || '!'"
             " WHERE partition_key = 'P1'")  # fmt: skip
    await tx("person:8", "UPDATE amrita_memory.memory SET tags = tags || 'x'::text"
             " WHERE partition_key = 'P2'", note="bulk tag")  # fmt: skip
    await tx("system", "UPDATE amrita_memory.memory SET embed_fingerprint = 'fp2'")
    # the merge hint and its note; an op hint other than merge is ignored
    await tx("l3:cycle-1", "UPDATE amrita_memory.memory SET importance = 8"
             " WHERE partition_key = 'P3'", op="merge", note="kept 0001")  # fmt: skip
    await tx("l3:cycle-2", "UPDATE amrita_memory.memory SET importance = 9"
             " WHERE partition_key = 'P3'", op="bogus")  # fmt: skip
    # past the bound of 3: four more edits of P1 leave the newest 3 per memory
    for i in range(4):
        await tx("person:9", f"UPDATE amrita_memory.memory SET importance = {i + 1}"
                 " WHERE partition_key = 'P1'")  # fmt: skip
    # a move alone (key migration): the access rows follow, no history
    await tx("system", "UPDATE amrita_memory.memory SET partition_key = 'P9'"
             f" WHERE id IN {ids(2, 6)}")  # fmt: skip
    # deletes: the access rows go; the history of a memory deleted 11 days ago goes with
    # the next delete in its partition, one deleted 9 days ago stays
    await tx("person:8", f"DELETE FROM amrita_memory.memory WHERE id IN {ids(4, 8)}")
    await conn.execute(
        "UPDATE amrita_memory.memory_change SET at = at - CASE memory_id"
        " WHEN lpad(to_hex(4), 32, '0') THEN interval '11 days' ELSE interval '9 days' END"
        " WHERE memory_id IN (lpad(to_hex(4), 32, '0'), lpad(to_hex(8), 32, '0'))"
    )
    await tx("system", f"DELETE FROM amrita_memory.memory WHERE id IN {ids(1, 5, 12)}",
             op="merge", note="kept 0003")  # fmt: skip
    # three statements of one transaction: the retention of the third sees the second
    async with conn.transaction():
        await conn.execute(
            "SELECT set_config('amrita_memory.actor', 'person:8', true),"
            " set_config('amrita_memory.history_keep', '3', true),"
            " set_config('amrita_memory.history_keep_deleted_days', '10', true)"
        )
        await conn.execute(f"DELETE FROM amrita_memory.memory WHERE id IN {ids(16, 13)}")
        await conn.execute(
            "UPDATE amrita_memory.memory_change SET at = at - interval '40 days'"
            f" WHERE memory_id = '{lpad(16)}'"
        )
        await conn.execute(f"DELETE FROM amrita_memory.memory WHERE id IN {ids(20, 17)}")
    # pause: an automatic actor is refused (and nothing of its statement stays), a person not
    await conn.execute(
        "INSERT INTO amrita_memory.paused_partition (partition_key, paused_at, paused_by)"
        " VALUES ('P2', now(), 'person:8')"
    )
    for automatic in ("llm:QQ_1", "extraction:s", "l3:c"):
        with pytest.raises(asyncpg.PostgresError) as refused:
            await tx(automatic, "UPDATE amrita_memory.memory SET importance = 2"
                     " WHERE partition_key IN ('P0', 'P2')")  # fmt: skip
        assert refused.value.sqlstate == "AMZ01"
        assert "P2 is paused" in str(refused.value)
    await tx("person:8", "UPDATE amrita_memory.memory SET importance = 2"
             " WHERE partition_key IN ('P0', 'P2')")  # fmt: skip
    await tx("import", "INSERT INTO amrita_memory.memory (id, partition_key, scope, content,"
             " importance, embedding, embed_fingerprint) VALUES"
             " (lpad('a1', 32, '0'), 'P2', 'user', 'imported', 3, '[1,1,1]', 'fp')")  # fmt: skip

    history = await conn.fetch(
        "SELECT partition_key, memory_id, actor_kind, actor_id, op, before, after, note,"
        "       at > now() - interval '1 hour' AS recent"
        "  FROM amrita_memory.memory_change ORDER BY partition_key, memory_id, seq"
    )
    access = await conn.fetch(
        "SELECT partition_key, memory_id, count(*) AS n FROM amrita_memory.memory_access"
        " GROUP BY 1, 2 ORDER BY 1, 2"
    )
    return {"history": [tuple(r) for r in history], "access": [tuple(r) for r in access]}


async def test_plain_sql_writes_record_what_their_rules_say(db_dsn: str) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        rows = await _scenario(conn)
    finally:
        await conn.close()

    history = rows["history"]
    ops = [h[4] for h in history]
    # the scenario reached every rule
    assert {"create", "update", "tag", "merge", "delete"} <= set(ops)
    imported = [h[:5] for h in history if h[1] == "0" * 30 + "a1"]
    assert imported == [("P2", "0" * 30 + "a1", "import", None, "create")]
    per_memory: dict[tuple[str, str], int] = {}
    for h in history:
        per_memory[(h[0], h[1])] = per_memory.get((h[0], h[1]), 0) + 1
    assert max(per_memory.values()) == 3  # the bound
    gone = {h[1] for h in history if h[4] in ("delete", "merge") and h[6] is None}
    assert lpad(4) not in {h[1] for h in history}  # past the retention: gone
    assert lpad(16) not in {h[1] for h in history}
    assert {lpad(13), lpad(17), lpad(20)} <= gone
    assert {lpad(8), lpad(1), lpad(5), lpad(12)} <= gone
    assert [h[7] for h in history if h[1] == lpad(1)][-1] == "kept 0003"
    moved = [(a[0], a[1]) for a in rows["access"]]
    assert moved == [("P9", lpad(2)), ("P9", lpad(6))]
    assert all(h[8] for h in history if h[1] != lpad(8))


def lpad(n: int) -> str:
    """The id _seed gives memory ``n``."""
    return f"{n:x}".rjust(32, "0")


def ids(*numbers: int) -> str:
    """A SQL list of the ids _seed gives ``numbers``."""
    return "(" + ", ".join(f"'{lpad(n)}'" for n in numbers) + ")"


async def test_a_restore_carrying_the_history_queues_no_trigger_work(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        for i in range(5):
            await mem.memories.add(partition_key="QQPlatform_Private_1", scope="user",
                                   content=f"记忆 {i}")  # fmt: skip
        info = await create_backup(mem.store)
        history = await mem.pool.fetch(_HISTORY)
        assert len(history) == 5
    header = read_header(info.jsonl_path)
    assert {"memory_change", "memory_access"} <= set(header["counts"])
    conn = await asyncpg.connect(db_dsn)
    try:
        await register_vector_codec(conn)
        await conn.execute("SET track_functions = 'pl'")
        async with conn.transaction():
            await load_jsonl(conn, info.jsonl_path, header)
            # 5 memories deleted and 5 copied back: nothing queued for either
            assert await _trail_function_calls(conn) == 0
            assert await conn.fetchval(
                "SELECT current_setting('amrita_memory.history_by_writer', true)"
            ) == ""  # fmt: skip
            assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 5
            assert await conn.fetch(_HISTORY) == history
            # the flag is off again: a plain write of the same transaction is recorded
            await conn.execute("UPDATE amrita_memory.memory SET importance = 9")
            assert await _trail_function_calls(conn) == 5
    finally:
        await conn.close()


_HISTORY = (
    "SELECT partition_key, memory_id, actor_kind, actor_id, op, before, after, note"
    " FROM amrita_memory.memory_change ORDER BY partition_key, memory_id, seq"
)
