"""sweep_batch_v6 / memory_history_v1 / trim_history_v2 (sweep_v6.sql, 0.11.0): the sweep
records one sweep_change row per batch instead of a memory_change row per memory.

v6 changes exactly what v5 changes (the same rows demoted, purged and kept, the same
reply), and a memory's history read through memory_history_v1 shows the same entries v5
wrote (op, actor, note, before, after) for every memory it changed; the entries merge with
the memory's own rows in seq order; trim_history_v2 expires the batch rows after the
retention days with the earlier history of what they purged; the downgrade turns every
batch row back into v5's memory_change rows.
"""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from alembic.script import ScriptDirectory

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.pg import migrate
from tests.support.memory import memory_on

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
KEYS = ("QQPlatform_Private_10001", "QQPlatform_Group_20002", "QQPlatform_Private_10003")
PAUSED = "QQPlatform_Private_10003"
BATCH = (
    "SELECT scanned, demoted, purged, kept, next_cursor, wrapped, purged_ids"
    " FROM amrita_memory.{fn}($1, 7, 90, 40, true, true, false, $2, NULL)"
)
HISTORY = (
    "SELECT partition_key, memory_id, actor_kind, actor_id, op, before, after, note"
    " FROM amrita_memory.memory_history_v1($1, $2, 100) ORDER BY seq"
)
MEMORIES = (
    "SELECT partition_key, id, content, tags, importance, category, scope, source, tier_since"
    " FROM amrita_memory.memory ORDER BY id"
)


async def _fill(mem: Memory, n: int = 150) -> None:
    """Memories of every tier and age, user-written ones, odd tags, a paused partition."""
    rng = random.Random(6)
    tags_pool = [[], ["猫"], ['a"b', "c,d"], ["{x}", "\\y"], ["NULL", ""]]
    for i in range(n):
        await mem.memories.add(
            partition_key=rng.choice(KEYS),
            scope="user",
            content=f"记忆 {i}：{rng.choice(['猫', '茶', '考试'])}",
            tags=rng.choice(tags_pool),
            importance=rng.randint(1, 10),
            category=rng.choice([None, "event", "rule"]),
            source=rng.choice(["auto", "auto", "user"]),
            now=NOW - timedelta(days=rng.choice([1, 8, 30, 100, 200])),
        )
    await mem.pool.execute(
        "INSERT INTO amrita_memory.paused_partition (partition_key, paused_at, paused_by)"
        " VALUES ($1, now(), 'person:1')",
        PAUSED,
    )


async def _sweep(conn: asyncpg.Connection, fn: str) -> list[tuple[Any, ...]]:
    """Every batch of a whole pass from the start, as the rows it returned."""
    replies, cursor = [], ""
    while True:
        row = await conn.fetchrow(BATCH.format(fn=fn), NOW, cursor)
        replies.append(tuple(row))
        if row["wrapped"]:
            return replies
        cursor = row["next_cursor"]


def _entries(rows: list[asyncpg.Record]) -> list[tuple[Any, ...]]:
    return [
        (*tuple(r)[:5], None if r["before"] is None else json.loads(r["before"]),
         None if r["after"] is None else json.loads(r["after"]), r["note"])
        for r in rows
    ]  # fmt: skip


@pytest.mark.usefixtures("retired_sql")
async def test_v6_changes_what_v5_changes_and_its_history_reads_the_same(
    memory: Memory,
) -> None:
    await _fill(memory)
    async with memory.pool.acquire() as conn:
        before = [tuple(r) for r in await conn.fetch(MEMORIES)]
        seen: dict[str, Any] = {}
        for fn in ("sweep_batch_v5", "sweep_batch_v6"):
            tx = conn.transaction()
            await tx.start()
            await conn.execute(
                "SELECT set_config('amrita_memory.actor', 'person:alice', true),"
                " set_config('amrita_memory.note', '清理', true)"
            )
            replies = await _sweep(conn, fn)
            after = [tuple(r) for r in await conn.fetch(MEMORIES)]
            was = {(r[0], r[1]): r for r in before}
            now_is = {(r[0], r[1]): r for r in after}
            changed = {k for k, r in was.items() if now_is.get(k) != r}
            history = {k: _entries(await conn.fetch(HISTORY, *k)) for k in sorted(changed)}
            batch_rows = await conn.fetchval("SELECT count(*) FROM amrita_memory.sweep_change")
            seen[fn] = (replies, after, history, batch_rows)
            await tx.rollback()
    (r5, after5, hist5, rows5), (r6, after6, hist6, rows6) = seen.values()
    assert r6 == r5 and after6 == after5
    for k in hist5:
        assert hist6[k] == hist5[k], (hist6[k], hist5[k])
    assert hist6 == hist5
    demoted, purged = sum(r[1] for r in r5), sum(r[2] for r in r5)
    assert demoted >= 10 and purged >= 10, (demoted, purged)
    assert len(hist5) == demoted + purged
    # what v6 recorded: one row per batch that changed something, none under v5
    assert rows5 == 0 and 1 <= rows6 <= len(r6)
    # every changed memory's newest entry is the sweep's, by the actor and note set
    newest = {k: v[-1] for k, v in hist6.items()}
    assert {(e[2], e[3], e[7]) for e in newest.values()} == {("person", "alice", "清理")}
    assert {e[4] for e in newest.values()} == {"update", "delete"}
    # the paused partition and the user's own memories were kept
    assert not any(k[0] == PAUSED for k in hist6)


async def test_a_memory_history_merges_its_rows_and_its_sweep_entries(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        now = datetime.now(UTC)
        key = KEYS[0]
        old = await mem.memories.add(
            partition_key=key, scope="user", content="爱爬山", tags=["运动"], importance=9,
            now=now - timedelta(days=100),
        )  # fmt: skip
        await mem.memories.update(key, old.id, content="周末爬山", now=now - timedelta(days=99))
        report = await mem.memories.sweep(now=now, force=True)
        assert report.demoted == 1
        # the demoted memory goes on living: an edit after the sweep comes after its entry
        await mem.memories.update(key, old.id, content="每周末爬山")
        changes = await mem.trail.history(key, old.id)
        assert [c.op for c in changes] == ["update", "update", "update", "create"]
        sweep_entry = changes[1]
        assert sweep_entry.actor.kind == "system"
        assert sweep_entry.before is not None and sweep_entry.after is not None
        assert (sweep_entry.before["importance"], sweep_entry.after["importance"]) == (9, 5)
        assert sweep_entry.before["tags"] == ["运动"] == sweep_entry.after["tags"]
        assert sweep_entry.before["content"] == "周末爬山"
        assert [c.seq for c in changes] == sorted((c.seq for c in changes), reverse=True)
        # the limit counts both kinds
        assert [c.op for c in await mem.trail.history(key, old.id, limit=2)] == [
            "update",
            "update",
        ]


async def test_trim_v2_expires_old_batch_rows_and_what_they_purged(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        now = datetime.now(UTC)
        key = KEYS[0]
        gone = await mem.memories.add(
            partition_key=key, scope="user", content="今天吃了面", importance=2,
            now=now - timedelta(days=8),
        )  # fmt: skip
        kept = await mem.memories.add(
            partition_key=key, scope="user", content="爱爬山", importance=9,
            now=now - timedelta(days=100),
        )  # fmt: skip
        report = await mem.memories.sweep(now=now, force=True)
        assert (report.demoted, report.purged) == (1, 1)
        trim = "SELECT trimmed, expired FROM amrita_memory.trim_history_v2(20, 30)"
        assert tuple(await mem.pool.fetchrow(trim)) == (0, 0)  # the batch row is new
        await mem.pool.execute("UPDATE amrita_memory.sweep_change SET at = at - interval '31 days'")
        # its two entries, and the purged memory's create row (the kept one keeps its own)
        assert tuple(await mem.pool.fetchrow(trim)) == (0, 3)
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.sweep_change") == 0
        assert await mem.trail.history(key, gone.id) == []
        assert [c.op for c in await mem.trail.history(key, kept.id)] == ["create"]


async def test_the_downgrade_turns_batch_rows_into_v5_rows(
    empty_db_dsn: str, tmp_path: Path
) -> None:
    revision = "0052_sweep_batch_log"
    script = ScriptDirectory.from_config(migrate.alembic_config()).get_revision(revision)
    assert script is not None and isinstance(script.down_revision, str)
    await migrate.upgrade(empty_db_dsn)
    async with memory_on(empty_db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        await _fill(mem, 60)
        report = await mem.memories.sweep(now=NOW, force=True)
        assert report.demoted + report.purged >= 5
        keys = [
            tuple(r)
            for r in await mem.pool.fetch(
                "SELECT DISTINCT u.p, u.m FROM amrita_memory.sweep_change s,"
                " unnest(s.partition_keys, s.memory_ids) AS u(p, m)"
            )
        ]
        assert len(keys) == report.demoted + report.purged
        read = "SELECT * FROM amrita_memory.memory_history_v1($1, $2, 100) ORDER BY seq"
        shown = {k: [tuple(r) for r in await mem.pool.fetch(read, *k)] for k in keys}
    await migrate.downgrade(empty_db_dsn, script.down_revision)
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        rows = (
            "SELECT partition_key, memory_id, seq, at, actor_kind, actor_id, op, before, after,"
            " note FROM amrita_memory.memory_change"
            " WHERE partition_key = $1 AND memory_id = $2 ORDER BY seq"
        )
        assert {k: [tuple(r) for r in await conn.fetch(rows, *k)] for k in keys} == shown
        assert await conn.fetchval("SELECT to_regclass('amrita_memory.sweep_change')") is None
    finally:
        await conn.close()
    await migrate.upgrade(empty_db_dsn)


async def test_trim_v2_walks_only_what_changed_since_its_last_run(
    db_dsn: str, tmp_path: Path
) -> None:
    """The watermark (sweep_state.trimmed_seq): rows past it are walked; a memory with no
    new rows is not, until the bound gets smaller or the sequence moves back."""
    async with memory_on(db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        key = KEYS[0]
        a = await mem.memories.add(partition_key=key, scope="user", content="甲")
        b = await mem.memories.add(partition_key=key, scope="user", content="乙")

        async def extra(memory_id: str, n: int, seq: int | None = None) -> None:
            """n history rows as the previous release's sweep writes them (no bound)."""
            for i in range(n):
                await mem.pool.execute(
                    "INSERT INTO amrita_memory.memory_change (partition_key, memory_id, seq, at,"
                    " actor_kind, op, before, after) VALUES ($1, $2,"
                    " coalesce($3, nextval(pg_get_serial_sequence("
                    "'amrita_memory.memory_change', 'seq'))), now(), 'system', 'update',"
                    " '{}', '{}')",
                    key,
                    memory_id,
                    None if seq is None else seq + i,
                )

        async def rows(memory_id: str) -> int:
            return len(await mem.trail.history(key, memory_id, limit=100))

        async def trim(keep: int) -> tuple[int, int]:
            row = await mem.pool.fetchrow(
                "SELECT trimmed, expired FROM amrita_memory.trim_history_v2($1, 30)", keep
            )
            return (row["trimmed"], row["expired"])

        await extra(a.id, 5)
        await extra(b.id, 5)
        assert (await rows(a.id), await rows(b.id)) == (6, 6)
        assert await trim(3) == (6, 0)  # never ran: the whole table
        watermark = await mem.pool.fetchval(
            "SELECT trimmed_seq = pg_sequence_last_value(pg_get_serial_sequence("
            "'amrita_memory.memory_change', 'seq')::regclass) AND trimmed_keep = 3"
            " FROM amrita_memory.sweep_state"
        )
        assert watermark is True
        await extra(a.id, 2)  # past the watermark: walked
        assert await trim(3) == (2, 0)
        assert (await rows(a.id), await rows(b.id)) == (3, 3)
        # b over the bound with rows BEHIND the watermark (explicit low seq): not walked...
        await extra(b.id, 2, seq=-10)
        assert await trim(3) == (0, 0)
        assert await rows(b.id) == 5
        # ...until the sequence moves back below the watermark (as a restore moves it)
        await mem.pool.execute(
            "SELECT setval(pg_get_serial_sequence('amrita_memory.memory_change', 'seq'), 1)"
        )
        assert await trim(3) == (2, 0)
        assert await rows(b.id) == 3
        # a smaller bound walks the whole table again
        assert await trim(3) == (0, 0)
        assert await trim(2) == (2, 0)
        assert (await rows(a.id), await rows(b.id)) == (2, 2)


async def test_a_batch_row_takes_its_seq_from_the_history_sequence(
    conn: asyncpg.Connection,
) -> None:
    """No sequence of its own (a second one would let the two tables' orders drift apart):
    an insert that names no seq fails, the sweep names memory_change's."""
    default = await conn.fetchval(
        "SELECT column_default FROM information_schema.columns WHERE table_schema ="
        " 'amrita_memory' AND table_name = 'sweep_change' AND column_name = 'seq'"
    )
    assert default is None
    owned = await conn.fetchval(
        "SELECT count(*) FROM pg_depend d JOIN pg_class s ON s.oid = d.objid"
        " WHERE s.relkind = 'S' AND d.refobjid = 'amrita_memory.sweep_change'::regclass"
    )
    assert owned == 0


async def _gin_scans(conn: asyncpg.Connection) -> int:
    return int(
        await conn.fetchval(
            "SELECT coalesce(idx_scan, 0) FROM pg_stat_user_indexes"
            " WHERE indexrelname = 'ix_sweep_change_memory_ids'"
        )
        or 0
    )


async def test_a_memory_history_finds_its_batch_rows_by_the_gin_index(
    conn: asyncpg.Connection,
) -> None:
    """300 batch rows of 2,000 memories (their arrays in TOAST): the planner, which does not
    count detoasting, would read every batch row; memory_history_v1 goes by the index."""
    await conn.execute(
        """
        INSERT INTO amrita_memory.sweep_change
               (seq, at, actor_kind, partition_keys, memory_ids, ops, contents, tags, importances,
                categories, scopes, sources, new_importances, new_sources)
        SELECT nextval(pg_get_serial_sequence('amrita_memory.memory_change', 'seq')), now(),
               'system', array_fill('P'::text, ARRAY[2000]),
               ARRAY(SELECT md5(b::text || '-' || i) FROM generate_series(1, 2000) i),
               array_fill('update'::text, ARRAY[2000]), array_fill('x'::text, ARRAY[2000]),
               array_fill('{}'::text, ARRAY[2000]), array_fill(5::smallint, ARRAY[2000]),
               array_fill(NULL::text, ARRAY[2000]), array_fill('user'::text, ARRAY[2000]),
               array_fill('auto'::text, ARRAY[2000]), array_fill(3::smallint, ARRAY[2000]),
               array_fill('auto'::text, ARRAY[2000])
          FROM generate_series(1, 300) b;
        ANALYZE amrita_memory.sweep_change;
        """
    )
    before = await _gin_scans(conn)
    rows = await conn.fetch(
        "SELECT op, before, after FROM amrita_memory.memory_history_v1('P', md5('77-5'), 20)"
    )
    assert [(r["op"], json.loads(r["before"])["importance"], json.loads(r["after"])["importance"])
            for r in rows] == [("update", 5, 3)]  # fmt: skip
    for _ in range(50):  # statistics are flushed by the backend shortly after the query
        if await _gin_scans(conn) > before:
            break
        await asyncio.sleep(0.1)
    assert await _gin_scans(conn) > before, "memory_history_v1 did not use the GIN index"
