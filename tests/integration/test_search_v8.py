"""search_memories_v8 / recall_memories_v4 (0.10.0, 0048_keyword_intersect): a row's
matching lexemes by intersection (two ts_delete) instead of an unnest of its tsvector.

The identity it rests on holds for any tokens (quotes, backslashes, colons, duplicates, an
empty one); v8 returns exactly v7's rows and scores (every column equal, not approximately:
the same lexemes summed in the same order) in keyword and both hybrid fusions, with and
without decay and filters, on long Chinese memories whose rows match several query tokens;
recall_memories_v4 answers and logs like v3; the named queries call release 9.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.queries import query
from tests.integration.test_hybrid_search import KEY, NOW, fill
from tests.integration.test_search_v7 import CALL, assert_entry_point

CJK = "我你他她猫狗茶山咖啡北京上海电影音乐旅行考试生日周末早上晚上喜欢讨厌朋友家人工作学习"
LONG = "QQPlatform_Group_7"

INTERSECTION = (
    "SELECT tsvector_to_array(ts_delete(t, tsvector_to_array(ts_delete(t, $2::text[]))))"
    "  FROM array_to_tsvector($1::text[]) t"
)
FILTERED = (
    "SELECT coalesce(array_agg(u ORDER BY n), '{}') "
    "  FROM unnest(tsvector_to_array(array_to_tsvector($1::text[]))) WITH ORDINALITY AS x(u, n)"
    " WHERE u = ANY ($2::text[])"
)


async def test_the_intersection_is_the_filtered_unnest_for_any_tokens(
    conn: asyncpg.Connection,
) -> None:
    """v8's expression against v7's, on random token sets with the characters tsquery
    syntax and quoting care about: the same lexemes in the same (lexeme) order."""
    rng = random.Random(11)
    alphabet = ["猫", "茶", "北京", "a", "b'c", "d\\e", "f:g", "h i", "&", "|", "!", "(x)", "Ω"]
    checked = 0
    for _ in range(300):
        row = rng.sample(alphabet, rng.randint(1, len(alphabet)))
        tokens = [rng.choice([*alphabet, "", "不在"]) for _ in range(rng.randint(0, 6))]
        got = await conn.fetchval(INTERSECTION, row, tokens)
        want = await conn.fetchval(FILTERED, row, tokens)
        assert list(got) == list(want), (row, tokens)
        checked += bool(want)
    assert checked > 100


async def _fill_long(memory: Memory, n: int, rng: random.Random) -> None:
    """Memories of 20-40 characters of a small alphabet: ~40 tokens each, and a query
    shares several with many rows (as real Chinese memories do)."""
    for _ in range(n):
        text = "".join(rng.choice(CJK) for _ in range(rng.randint(20, 40)))
        await memory.memories.add(
            partition_key=LONG,
            scope=rng.choice(["user", "group"]),
            content=text,
            tags=rng.sample(["猫", "茶"], rng.randint(0, 1)),
            importance=rng.randint(1, 10),
            now=NOW - timedelta(days=rng.uniform(0, 300)),
        )


@pytest.mark.usefixtures("retired_sql")  # v7/v3 retired by 0051, re-installed as released
async def test_v8_returns_exactly_what_v7_returns(memory: Memory) -> None:
    rng = random.Random(8)
    await fill(memory, KEY, 120, rng)
    await _fill_long(memory, 150, rng)
    dim = len(await memory.embedder.embed_query("x"))
    filters: list[tuple[Any, ...]] = [
        (None, None, None, None, None),
        (3, 8, None, None, None),
        (None, None, "group", ["猫"], None),
    ]
    queries: list[list[str] | None] = [
        search_tokens("北京 旅行 考试"),
        search_tokens("我喜欢猫和咖啡"),
        search_tokens("周末早上"),
        ["猫", "猫", "", "喜欢", "喜欢"],  # duplicates and an empty token
        ["没有这个词"],
        [],
        None,
    ]
    v7, v8 = CALL.format(fn="search_memories_v7"), CALL.format(fn="search_memories_v8")
    compared = {"keyword": 0, "rrf": 0, "weighted": 0}
    n = 0
    async with memory.pool.acquire() as conn:
        for partition in (KEY, LONG):
            for decay in (True, False):
                for flt in filters:
                    for tokens in queries:
                        n += 1
                        vec = np.random.default_rng(n).standard_normal(dim).astype(np.float32)
                        for mode, fusion, weight in (
                            ("keyword", "rrf", 0.5),
                            ("hybrid", "rrf", 0.5),
                            ("hybrid", "weighted", 0.3),
                        ):
                            q = None if mode == "keyword" else vec
                            args = (partition, q, tokens, mode, 7, NOW, decay, *flt, fusion, weight)
                            old = [tuple(r) for r in await conn.fetch(v7, *args)]
                            new = [tuple(r) for r in await conn.fetch(v8, *args)]
                            assert new == old, (partition, decay, flt, tokens, mode, fusion)
                            key = "keyword" if mode == "keyword" else fusion
                            compared[key] += any(r[14] for r in old)
    # rows with a keyword score were compared in every mode
    assert min(compared.values()) >= 15, compared


@pytest.mark.usefixtures("retired_sql")  # v7/v3 retired by 0051, re-installed as released
async def test_recall_v4_answers_and_logs_like_v3(memory: Memory) -> None:
    rng = random.Random(4)
    await _fill_long(memory, 40, rng)
    call = (
        "SELECT * FROM amrita_memory.{fn}(p_partition => $1, p_query => NULL, p_tokens => $2,"
        " p_mode => 'keyword', p_top_k => 5, p_now => $3, p_decay => true, p_base_days => 30,"
        " p_boost => 1, p_floor => 0.05, p_chat => $1, p_who => '7', p_query_text => 'q',"
        " p_surface => 'tool', p_keep => 20, p_log => true)"
    )
    tokens = search_tokens("喜欢猫")
    logged = "SELECT count(*) FROM amrita_memory.memory_access WHERE partition_key = $1"
    async with memory.pool.acquire() as conn:
        v3 = [
            tuple(r)
            for r in await conn.fetch(call.format(fn="recall_memories_v3"), LONG, tokens, NOW)
        ]
        after_v3 = await conn.fetchval(logged, LONG)
        v4 = [
            tuple(r)
            for r in await conn.fetch(call.format(fn="recall_memories_v4"), LONG, tokens, NOW)
        ]
        after_v4 = await conn.fetchval(logged, LONG)
        assert v4 == v3 and len(v4) == 5
        assert after_v3 == 5 and after_v4 == 10  # each logged its five hits
        await conn.execute(
            "INSERT INTO amrita_memory.paused_partition (partition_key, paused_at, paused_by) "
            "VALUES ($1, now(), 'person:1')",
            LONG,
        )
        paused = await conn.fetch(call.format(fn="recall_memories_v4"), LONG, tokens, NOW)
        assert [(r["id"], r["paused"]) for r in paused] == [(None, True)]
        assert await conn.fetchval(logged, LONG) == 10


async def test_v8_settings_and_what_it_calls(memory: Memory) -> None:
    async with memory.pool.acquire() as conn:
        await assert_entry_point(conn, "search_memories_v8", "recall_memories_v4", "v8")


async def test_the_named_queries_call_release_9() -> None:
    assert "amrita_memory.search_memories_v8(" in query("search_memories")
    assert "amrita_memory.recall_memories_v4(" in query("recall_memories")
    assert "amrita_memory.search_memories_v8(" in query("search_unpaused")


async def test_a_read_replica_statement_writes_nothing(conn: asyncpg.Connection) -> None:
    """search_unpaused runs on a hot standby: v8 must not write."""
    async with conn.transaction(readonly=True):
        rows = await conn.fetch(
            CALL.format(fn="search_memories_v8"),
            KEY, None, ["猫"], "keyword", 5, NOW, True,
            None, None, None, None, None, "rrf", 0.5,
        )  # fmt: skip
    assert rows == []
