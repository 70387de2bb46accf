"""search_memories_v3 returns exactly what v2 returns (same rows, bit-identical scores), its
filter is the one inlined function, and a query of another dimension is refused by SQLSTATE."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from typing import Any

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.maintenance.ann import maintain_ann_indexes
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.queries import query
from tests.support.data import random_memories

NOW = datetime(2026, 6, 1, tzinfo=UTC)
SMALL = "QQPlatform_Private_1"
BIG = "QQPlatform_Group_9"
ARGS = "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 200"
FILTERS: list[tuple[Any, ...]] = [
    (None, None, None, None),
    (4, 7, None, None),
    (None, None, "group", None),
    (None, None, None, ["猫", "茶"]),
    (8, 10, "user", ["狗"]),
]


async def _fill(mem: Memory, partition: str, n: int, rng: random.Random) -> None:
    await random_memories(mem, partition, n, rng, NOW)


async def _search(mem: Memory, function: str, *args: Any) -> list[tuple[Any, ...]]:
    rows = await mem.pool.fetch(
        f"SELECT id, distance, decay_score, age_days FROM amrita_memory.{function}({ARGS})", *args
    )
    return [tuple(r) for r in rows]


@pytest.mark.usefixtures("retired_sql")
async def test_v3_equals_v2_on_small_and_ann_partitions(memory: Memory) -> None:
    rng = random.Random(3)
    await _fill(memory, SMALL, 120, rng)
    await _fill(memory, BIG, 320, rng)
    report = await maintain_ann_indexes(memory.pool, min_rows=300)
    assert len(report.built) == 1  # BIG takes the HNSW path, SMALL the exact one
    dim = len(await memory.embedder.embed_query("x"))
    compared = 0
    for partition in (SMALL, BIG):
        for decay in (True, False):
            for flt in FILTERS:
                query_vector = (
                    np.random.default_rng(compared).standard_normal(dim).astype(np.float32)
                )
                args = (partition, query_vector, 7, NOW, decay, 30.0, 1.0, 0.05, *flt)
                v2 = await _search(memory, "search_memories_v2", *args)
                v3 = await _search(memory, "search_memories_v3", *args)
                assert v3 == v2  # same ids, same order, bit-identical floats
                if partition == BIG:  # the HNSW part on its own, against v1's HNSW branch
                    v1 = await _search(memory, "search_memories_v1", *args)
                    assert await _search(memory, "search_memories_ann_v3", *args) == v1
                compared += bool(v2)
    assert compared >= 15
    # The named query the store calls (search_memories_v4 since 0.3.0) in vector mode
    # gives v2's rows.
    named = await memory.pool.fetch(
        query("search_memories"),
        SMALL,
        query_vector,
        [],
        "vector",
        7,
        NOW,
        True,
        30.0,
        1.0,
        0.05,
        None,
        None,
        None,
        None,
        None,
        200,
        "rrf",
        60.0,
        0.5,
    )
    assert [r["id"] for r in named] == [
        r[0]
        for r in await _search(
            memory,
            "search_memories_v2",
            SMALL,
            query_vector,
            7,
            NOW,
            True,
            30.0,
            1.0,
            0.05,
            None,
            None,
            None,
            None,
        )
    ]


# ---------------------------------------------------------------- the plan

#: 200 partitions of 100 rows (the common shape: partitions at or under their cap), 4-d
FILL = """
INSERT INTO amrita_memory.memory
       (partition_key, scope, content, tags, importance, embedding, embed_fingerprint, created_at)
SELECT 'p_' || (g % 200), CASE WHEN g % 2 = 0 THEN 'user' ELSE 'group' END, 'c' || g,
       CASE WHEN g % 3 = 0 THEN '{a}'::text[] ELSE '{b}'::text[] END, 1 + g % 10,
       ('[' || (g % 7) || ',' || (g % 11) || ',' || (g % 13) || ',1]')::vector, 'fp',
       '2026-06-01'::timestamptz - (g % 400) * interval '1 day'
  FROM generate_series(1, 20000) g
"""
EXACT = (
    "SELECT * FROM amrita_memory.{fn}('p_7', '[1,2,3,4]', 5, '2026-06-01', true, 30, 1, 0.05, "
    "4, 7, 'user', '{{a}}')"
)


async def _plan(conn: asyncpg.Connection, sql: str) -> str:
    return "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN (VERBOSE, COSTS OFF) {sql}"))


@pytest.mark.usefixtures("retired_sql")
async def test_the_filter_function_inlines_and_the_exact_plan_is_v2s(
    conn: asyncpg.Connection,
) -> None:
    await conn.execute(FILL)
    await conn.execute("ANALYZE amrita_memory.memory")
    v2 = await _plan(conn, EXACT.format(fn="search_memories_exact_v2"))
    v3 = await _plan(conn, EXACT.format(fn="search_memories_exact_v3"))
    assert "memory_matches_v1" not in v3  # inlined: no function call per row
    assert v3 == v2  # the same plan, predicate for predicate
    # ...which reads one partition through a btree led by partition_key.
    assert re.search(r"Index (Scan|Cond).*\n?.*partition_key = 'p_7'", v3)
    assert "Seq Scan" not in v3
    assert "(m.importance >= 4) AND (m.importance <= 7)" in v3
    # The chroma backend's candidate query uses the same function, inlined the same way.
    chroma = await _plan(
        conn,
        query("chroma_candidate_rows")
        .replace("$1", "'p_7'")
        .replace("$2", "4")
        .replace("$3", "7")
        .replace("$4", "'user'")
        .replace("$5", "'{a}'")
        .replace("$6", "NULL")
        .replace("$7", "201"),
    )
    assert "memory_matches_v1" not in chroma
    assert "memory_matches_v2" not in chroma
    assert "(m.importance >= 4) AND (m.importance <= 7)" in chroma
    assert "Seq Scan" not in chroma


@pytest.mark.usefixtures("retired_sql")  # retired by 0036, re-installed as released
async def test_the_filter_function_is_the_predicate_it_replaces(conn: asyncpg.Connection) -> None:
    """Every combination of NULL and set filters, on rows at the boundaries."""
    rows = [
        (i, s, t)
        for i in (1, 3, 4, 7, 8, 10)
        for s in ("user", "group")
        for t in ([], ["a"], ["a", "b"])
    ]
    filters = [
        (lo, hi, scope, tags)
        for lo in (None, 4)
        for hi in (None, 7)
        for scope in (None, "user")
        for tags in (None, ["b", "c"])
    ]
    for importance, scope, tags in rows:
        for lo, hi, want_scope, any_tags in filters:
            expected = (
                (lo is None or importance >= lo)
                and (hi is None or importance <= hi)
                and (want_scope is None or scope == want_scope)
                and (any_tags is None or bool(set(tags) & set(any_tags)))
            )
            got = await conn.fetchval(
                "SELECT amrita_memory.memory_matches_v1($1::smallint, $2, $3, $4, $5, $6, $7)",
                importance,
                scope,
                tags,
                lo,
                hi,
                want_scope,
                any_tags,
            )
            assert got is expected, (importance, scope, tags, lo, hi, want_scope, any_tags)


# ---------------------------------------------------------------- the dimension check


@pytest.mark.usefixtures("retired_sql")
async def test_a_query_of_another_dimension_is_refused_by_sqlstate(
    conn: asyncpg.Connection,
) -> None:
    for i in range(3):  # the first write through insert_memory (v2) records the dimension
        await conn.fetchrow(
            query("insert_memory"),
            SMALL,
            "user",
            f"m{i}",
            [],
            5,
            None,
            "user",
            None,
            np.full(8, i, dtype=np.float32),
            "fp",
            NOW,
            100,
            [f"m{i}"],
            None,
            None,
            None,
        )
    assert await conn.fetchval("SELECT embed_dim FROM amrita_memory.store_meta") == 8
    args = (3, NOW, True, 30.0, 1.0, 0.05, None, None, None, None)
    # the named query (search_memories_v4) in vector mode: tokens, mode before the v3 args
    tail = (None, 200, "rrf", 60.0, 0.5)
    assert (
        len(
            await conn.fetch(
                query("search_memories"), SMALL, np.ones(8, np.float32), [], "vector", *args, *tail
            )
        )
        == 3
    )
    other = np.ones(9, dtype=np.float32)
    for partition in (SMALL, "QQPlatform_Private_empty"):  # refused even where no row would fail
        for mode in ("vector", "hybrid"):
            with pytest.raises(asyncpg.PostgresError) as info:
                await conn.fetch(
                    query("search_memories"), partition, other, ["m1"], mode, *args, *tail
                )
            assert info.value.sqlstate == "AMF03"
    # v2 could only fail with pgvector's generic data exception (22000), and only on rows.
    v2 = f"SELECT * FROM amrita_memory.search_memories_v2({ARGS})"
    assert await conn.fetch(v2, "QQPlatform_Private_empty", other, *args) == []
    with pytest.raises(asyncpg.PostgresError) as old:
        await conn.fetch(v2, SMALL, other, *args)
    assert old.value.sqlstate == "22000"
