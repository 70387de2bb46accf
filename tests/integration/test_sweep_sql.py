"""The sweep's functions (sql/functions/sweep.sql and the history of trail.sql):
sweep_batch_v8, sweep_cutoff_v1, memory_history_v1, trim_history_v2.

A whole pass changes exactly the rows the sweep's rule says (keep within the tier's
lifetime, then demote, or purge a low memory; a paused partition and, protected, a
person's memories kept), under three configurations, and every changed memory's history
read through memory_history_v1 shows what it was and what it became, by the transaction's
actor and note; its batches visit every row once, in the primary key's order, whatever
characters a partition key holds ('/' included); at each tier's boundary (1 us either
side, odd lifetimes included) it decides as the rule; sweep_cutoff_v1 restates
``age_days_v1 <= days`` for negative, tiny, huge, infinite and NaN lifetimes; the history
is one sweep_change row per batch, merged with a memory's own rows in seq order, found by
its GIN index, and trim_history_v2 expires it after the retention days with the earlier
history of what it purged. Rows locked by an edit are skipped: tests/contract/test_sweep.py
runs through the service.
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

from amrita_memory_pg.memory import Memory
from tests.integration.test_decay_sql_parity import SWEEP_RULE
from tests.support.memory import memory_on

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
KEYS = ("QQPlatform_Private_10001", "QQPlatform_Group_20002", "QQPlatform_Private_10003")
PAUSED = "QQPlatform_Private_10003"
BATCH = (
    "SELECT scanned, demoted, purged, kept, next_cursor, wrapped, purged_ids"
    " FROM amrita_memory.sweep_batch_v8($1, $3, $4, $7, $5, $6, $8, $2, NULL)"
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


async def _pass(
    conn: asyncpg.Connection, config: tuple[Any, ...], batch: int, dry: bool = False
) -> list[Any]:
    """Every batch of a whole pass from the start, as the rows it returned."""
    replies, cursor = [], ""
    while True:
        row = await conn.fetchrow(BATCH, NOW, cursor, *config, batch, dry)
        assert row is not None
        replies.append(row)
        if row["wrapped"]:
            return replies
        cursor = row["next_cursor"]


def _entries(rows: list[asyncpg.Record]) -> list[tuple[Any, ...]]:
    return [
        (*tuple(r)[:5], None if r["before"] is None else json.loads(r["before"]),
         None if r["after"] is None else json.loads(r["after"]), r["note"])
        for r in rows
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("short", "long", "restart", "protect"),
    [(7.0, 90.0, True, True), (7.0, 90.0, False, False), (20.0, 3.0, True, False)],
    ids=["defaults", "no-restart-unprotected", "swapped-bounds"],
)
async def test_a_pass_changes_what_the_rule_says_and_its_history_shows_each_change(
    memory: Memory, short: float, long: float, restart: bool, protect: bool
) -> None:
    await _fill(memory)
    config = (short, long, restart, protect)
    async with memory.pool.acquire() as conn:
        rule = SWEEP_RULE.format(
            imp="importance",
            age=f"amrita_memory.age_days_v1({'tier_since' if restart else 'created_at'}, $1)",
            short="$2",
            long="$3",
        )
        expected = {
            (r["partition_key"], r["id"]): r["action"]
            for r in await conn.fetch(
                "SELECT partition_key, id, CASE"
                "  WHEN partition_key = $4 OR ($5 AND source = 'user') THEN 'keep'"
                f" ELSE {rule} END AS action FROM amrita_memory.memory",
                NOW, short, long, PAUSED, protect,
            )
        }  # fmt: skip
        before = {(r[0], r[1]): r for r in await conn.fetch(MEMORIES)}
        tx = conn.transaction()
        await tx.start()
        await conn.execute(
            "SELECT set_config('amrita_memory.actor', 'person:alice', true),"
            " set_config('amrita_memory.note', '清理', true)"
        )
        replies = await _pass(conn, config, 40)
        after = {(r[0], r[1]): r for r in await conn.fetch(MEMORIES)}
        changed = sorted(k for k, r in before.items() if after.get(k) != r)
        history = {k: _entries(await conn.fetch(HISTORY, *k)) for k in changed}
        batch_rows = await conn.fetchval("SELECT count(*) FROM amrita_memory.sweep_change")
        await tx.rollback()
    got = {
        k: "purge" if k not in after
        else "keep" if after[k]["importance"] == before[k]["importance"] else "demote"
        for k in before
    }  # fmt: skip
    assert got == expected
    totals = [sum(r[c] for r in replies) for c in ("scanned", "demoted", "purged", "kept")]
    assert totals[0] == len(before)
    demoted, purged = totals[1], totals[2]
    assert demoted == list(expected.values()).count("demote") >= 5
    assert purged == list(expected.values()).count("purge") >= 5
    assert sorted(i for r in replies for i in r["purged_ids"]) == sorted(
        k[1] for k, action in expected.items() if action == "purge"
    )
    assert len(changed) == demoted + purged
    # one batch row per batch that changed something
    assert 1 <= batch_rows <= len(replies)

    def fields(row: asyncpg.Record) -> dict[str, Any]:
        return {f: row[f] for f in ("content", "tags", "importance", "category", "scope", "source")}

    for key in changed:
        entry = history[key][-1]  # the newest: the sweep's, by the actor and note set
        assert entry[2:5] == ("person", "alice", "delete" if key not in after else "update")
        assert entry[5] == fields(before[key]), key
        assert entry[6] == (None if key not in after else fields(after[key])), key
        assert entry[7] == "清理"
        if key in after:  # a demotion: one tier down, the clock restarted or not
            assert after[key]["tier_since"] == (NOW if restart else before[key]["tier_since"])
    assert not any(k[0] == PAUSED for k in changed)


async def test_the_batches_visit_every_row_once_in_primary_key_order(memory: Memory) -> None:
    """Partition keys with '/' (the cursor's separator), spaces and CJK, walked a few rows a
    batch: the cursors are the rows' positions in order, and nothing is seen twice."""
    keys = ["a/b", "a/b/c", "a", "a b", "群/20002", "QQPlatform_Private_10001"]
    for i in range(30):
        await memory.memories.add(
            partition_key=keys[i % len(keys)], scope="user", content=f"记忆 {i}", now=NOW
        )
    async with memory.pool.acquire() as conn:
        order = [
            f"{r[0]}/{r[1]}"
            for r in await conn.fetch(
                "SELECT partition_key, id FROM amrita_memory.memory ORDER BY partition_key, id"
            )
        ]
        replies = await _pass(conn, (7.0, 90.0, True, True), 4, dry=True)
    assert [r["scanned"] for r in replies] == [4] * 7 + [2]
    assert [r["next_cursor"] for r in replies[:-1]] == order[3::4]
    assert replies[-1]["next_cursor"] == ""  # wrapped: back to the start
    # p_until stops a pass at a position, inclusive
    async with memory.pool.acquire() as conn:
        row = await conn.fetchrow(
            "SELECT scanned, wrapped, next_cursor FROM amrita_memory.sweep_batch_v8("
            "$1, 7, 90, 100, true, true, true, $2, $3)",
            NOW, order[4], order[10],
        )  # fmt: skip
    assert tuple(row) == (6, True, order[10])
    # the walk's keyset is the primary key's: no index on id alone is needed
    async with memory.pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off")  # a 30-row table
        plan = "\n".join(
            r[0]
            for r in await conn.fetch(
                "EXPLAIN (COSTS OFF) SELECT id FROM amrita_memory.memory"
                " WHERE (partition_key, id) > ('a', 'b') ORDER BY partition_key, id LIMIT 5"
            )
        )
    assert "pk_memory" in plan, plan
    assert await memory.pool.fetchval("SELECT to_regclass('amrita_memory.ix_memory_id')") is None


async def test_at_each_tier_boundary_the_sweep_decides_as_the_rule(memory: Memory) -> None:
    """Memories whose clock is one microsecond either side of their tier's cutoff (and on
    it), for low, medium and high importance and lifetimes whose cutoffs fall between
    microseconds (the medium tier is a geometric mean)."""
    template = await memory.memories.add(
        partition_key="QQPlatform_Private_10001", scope="user", content="模板", tags=[],
        importance=5, source="auto", now=NOW,
    )  # fmt: skip
    configs = [(7.0, 90.0), (1.5, 2.25), (3.3, 3.3), (40.0, 0.7)]
    async with memory.pool.acquire() as conn:
        for short, long in configs:
            tx = conn.transaction()
            await tx.start()
            for importance in (1, 3, 4, 5, 7, 8, 10):
                days = await conn.fetchval(
                    "SELECT amrita_memory.tier_days_v1($1, $2, $3)", importance, short, long
                )
                edge = NOW - timedelta(seconds=days * 86400.0)
                for shift in (-2, -1, 0, 1, 2):
                    clock = edge + timedelta(microseconds=shift)
                    await conn.execute(
                        "INSERT INTO amrita_memory.memory (partition_key, scope, content,"
                        " importance, source, created_at, updated_at, tier_since, embedding,"
                        " embed_fingerprint, search_tokens)"
                        " SELECT partition_key, scope, $2, $3, 'auto', $4, $4, $4, embedding,"
                        " embed_fingerprint, search_tokens FROM amrita_memory.memory WHERE id = $1",
                        template.id, f"边界 {importance} {shift}", importance, clock,
                    )  # fmt: skip
            await conn.execute("DELETE FROM amrita_memory.memory WHERE id = $1", template.id)
            expected = {
                r["id"]: r["action"]
                for r in await conn.fetch(
                    "SELECT id, "
                    + SWEEP_RULE.format(
                        imp="importance",
                        age="amrita_memory.age_days_v1(tier_since, $1)",
                        short="$2",
                        long="$3",
                    )
                    + " AS action FROM amrita_memory.memory",
                    NOW, short, long,
                )
            }  # fmt: skip
            assert len(expected) == 35
            assert set(expected.values()) == {"keep", "demote", "purge"}
            before = {r["id"]: r["importance"] for r in await conn.fetch(MEMORIES)}
            await conn.fetchrow(BATCH, NOW, "", short, long, True, True, 1000, False)
            after = {r["id"]: r["importance"] for r in await conn.fetch(MEMORIES)}
            got = {
                i: "purge" if i not in after else "keep" if after[i] == before[i] else "demote"
                for i in before
            }
            assert got == expected, (short, long)
            await tx.rollback()


async def test_the_cutoff_restates_age_days_within_its_lifetime(
    conn: asyncpg.Connection,
) -> None:
    lifetimes = ["-1", "0", "1e-9", "7", "25.0998007960223", "1e6", "1e12", "Infinity", "NaN"]
    clocks = ["-1000 years", "-3000 years", "-8 days", "-7 days", "0", "1 day"]
    rows = await conn.fetch(
        """SELECT d, c,
                  (n + c::interval) >= amrita_memory.sweep_cutoff_v1(n, d::float8) AS kept,
                  amrita_memory.age_days_v1(n + c::interval, n) <= d::float8 AS within
             FROM unnest($1::text[]) AS d, unnest($2::text[]) AS c,
                  (SELECT '2026-12-01 12:00+00'::timestamptz AS n) AS t""",
        lifetimes,
        clocks,
    )
    assert len(rows) == len(lifetimes) * len(clocks)
    wrong = [(r["d"], r["c"], r["kept"], r["within"]) for r in rows if r["kept"] != r["within"]]
    assert wrong == []
    # the extremes are what they say: nothing kept below zero, everything past infinity
    assert {r["kept"] for r in rows if r["d"] == "-1"} == {False}
    assert {r["kept"] for r in rows if r["d"] in ("Infinity", "NaN", "1e12")} == {True}


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
