"""sweep_batch_v7 / sweep_cutoff_v1 (sweep_v7.sql, 0.12.0): the sweep decides by three
cutoffs computed once per batch and reaches its due rows by tid.

v7 changes exactly what v6 changes (v6 retired by 0055 and installed again for the
comparison by the retired_sql fixture: the same replies, the same rows after, the same
history entries and batch rows) under both clock settings and with the user's memories
protected or not; at each tier's boundary (1 us either side, odd lifetimes included) it
decides as sweep_action_v1(importance, age_days_v1(...)) (retired with v6, installed again
here); sweep_cutoff_v1 restates
``age_days_v1 <= days`` for negative, tiny, huge, infinite and NaN lifetimes. Rows locked
by an edit are skipped: tests/contract/test_sweep.py runs through the service (v7).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from amrita_memory_pg.memory import Memory
from tests.integration.test_sweep_v6 import HISTORY, MEMORIES, NOW, _entries, _fill

BATCH = (
    "SELECT scanned, demoted, purged, kept, next_cursor, wrapped, purged_ids"
    " FROM amrita_memory.{fn}($1, $3, $4, 40, $5, $6, false, $2, NULL)"
)


async def _pass(conn: asyncpg.Connection, fn: str, config: tuple[Any, ...]) -> list[Any]:
    """Every batch of a whole pass from the start, as the rows it returned."""
    replies, cursor = [], ""
    while True:
        row = await conn.fetchrow(BATCH.format(fn=fn), NOW, cursor, *config)
        assert row is not None
        replies.append(tuple(row))
        if row["wrapped"]:
            return replies
        cursor = row["next_cursor"]


async def _outcomes(
    conn: asyncpg.Connection, config: tuple[Any, ...]
) -> dict[str, tuple[Any, ...]]:
    """Each version's pass in a rolled-back transaction: replies, rows after, history of
    every changed memory, the batch rows' entries."""
    before = {(r[0], r[1]): tuple(r) for r in await conn.fetch(MEMORIES)}
    seen = {}
    for fn in ("sweep_batch_v6", "sweep_batch_v7"):
        tx = conn.transaction()
        await tx.start()
        await conn.execute("SELECT set_config('amrita_memory.actor', 'person:alice', true)")
        replies = await _pass(conn, fn, config)
        after = {(r[0], r[1]): tuple(r) for r in await conn.fetch(MEMORIES)}
        changed = sorted(k for k, r in before.items() if after.get(k) != r)
        history = {k: _entries(await conn.fetch(HISTORY, *k)) for k in changed}
        batches = [
            tuple(r)[1:]
            for r in await conn.fetch(
                "SELECT seq, actor_kind, actor_id, partition_keys, memory_ids, ops, contents,"
                " tags, importances, categories, scopes, sources, new_importances, new_sources"
                " FROM amrita_memory.sweep_change ORDER BY seq"
            )
        ]
        seen[fn] = (replies, after, history, batches)
        await tx.rollback()
    return seen


@pytest.mark.usefixtures("retired_sql")
@pytest.mark.parametrize(
    ("short", "long", "restart", "protect"),
    [(7.0, 90.0, True, True), (7.0, 90.0, False, False), (20.0, 3.0, True, False)],
    ids=["defaults", "no-restart-unprotected", "swapped-bounds"],
)
async def test_v7_changes_what_v6_changes_and_records_the_same_history(
    memory: Memory, short: float, long: float, restart: bool, protect: bool
) -> None:
    await _fill(memory)
    async with memory.pool.acquire() as conn:
        seen = await _outcomes(conn, (short, long, restart, protect))
    (r6, after6, hist6, rows6), (r7, after7, hist7, rows7) = seen.values()
    assert r7 == r6
    assert after7 == after6
    assert hist7 == hist6
    assert rows7 == rows6
    changed = sum(r[1] + r[2] for r in r6)
    assert changed >= 20 and len(hist6) == changed, changed


@pytest.mark.usefixtures("retired_sql")
@pytest.mark.parametrize("fn", ["sweep_batch_v7", "sweep_batch_v8"])
async def test_at_each_tier_boundary_v7_decides_as_sweep_action_v1(memory: Memory, fn: str) -> None:
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
                    "SELECT id, amrita_memory.sweep_action_v1(importance,"
                    " amrita_memory.age_days_v1(tier_since, $1), $2, $3) AS action"
                    " FROM amrita_memory.memory",
                    NOW, short, long,
                )
            }  # fmt: skip
            assert len(expected) == 35
            assert set(expected.values()) == {"keep", "demote", "purge"}
            before = {r["id"]: r["importance"] for r in await conn.fetch(MEMORIES)}
            await conn.fetchrow(
                BATCH.format(fn=fn).replace(", 40,", ", 1000,"),
                NOW, "", short, long, True, True,
            )  # fmt: skip
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
