"""The search functions of sql/functions/search.sql, as the store calls them.

search_memories_v8 (the entry point; recall_memories_v4 is it plus the access log) ranks
like score_memories_v1, the one body of every mode (bit for bit in vector mode; BM25 sums
a row's lexemes in lexeme order, so keyword and hybrid scores agree to 1e-12), and like
search_memories_v6, the per-mode bodies it sends a partition with its own HNSW index to,
in every mode, fusion, filter and path; a row's matching lexemes by intersection are the
filtered unnest of its tsvector for any tokens; its settings (generic plans, no bitmap
scans) and what it calls; the filters are one inlined function; a query of another
dimension is refused by SQLSTATE; the named queries bind by the functions' argument names.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.domain.decay import DecayPolicy
from amrita_memory_pg.domain.records import MemoryQuery, NewMemory, Ranking, SearchFilter
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.maintenance.ann import maintain_ann_indexes
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.memories import insert_args
from amrita_memory_pg.storage.pgvector import search_args, search_statement
from amrita_memory_pg.storage.queries import bind, catalogue, named_params, query
from tests.integration.test_hybrid_search import BIG, KEY, NOW, fill, insert, unit

CALL = (
    "SELECT * FROM amrita_memory.{fn}($1, $2, $3, $4, $5, $6, $7, 30, 1, 0.05, "
    "$8, $9, $10, $11, $12, 200, $13, 60, $14)"
)
#: score_memories_v1: every row of the partition (p_ids NULL), every mode in one body
REFERENCE = (
    "SELECT * FROM amrita_memory.score_memories_v1("
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, 60, $17, NULL)"
)
CJK = "我你他她猫狗茶山咖啡北京上海电影音乐旅行考试生日周末早上晚上喜欢讨厌朋友家人工作学习"
LONG = "QQPlatform_Group_7"
MODES = (
    ("vector", "rrf", 0.5),
    ("keyword", "rrf", 0.5),
    ("hybrid", "rrf", 0.5),
    ("hybrid", "weighted", 0.3),
)


def assert_same_ranking(
    new: list[tuple[Any, ...]], old: list[tuple[Any, ...]], mode: str, where: Any
) -> None:
    """The same rows in the same order; scores equal in vector mode, to 1e-12 otherwise."""
    assert [r[:12] for r in new] == [r[:12] for r in old], where
    for a, b in zip(new, old, strict=True):
        if mode == "vector":
            assert a[12:] == b[12:], where
        else:
            assert a[12:] == pytest.approx(b[12:], rel=1e-12), where


async def test_the_store_ranks_like_score_memories_v1_in_every_mode_at_the_exact_path(
    memory: Memory,
) -> None:
    rng = random.Random(11)
    await fill(memory, KEY, 120, rng)
    dim = len(await memory.embedder.embed_query("x"))
    filters: list[tuple[Any, ...]] = [
        (None, None, None, None, None),
        (4, 7, None, None, None),
        (None, None, "group", ["猫", "茶"], None),
        (None, None, None, None, "rule"),
    ]
    compared = {"vector": 0, "keyword": 0, "hybrid": 0}
    n = 0
    for decay in (True, False):
        for flt in filters:
            for text in ("北京 旅行 考试", "猫 咖啡", "没有这个词"):
                n += 1
                vec = np.random.default_rng(n).standard_normal(dim).astype(np.float32)
                tokens = search_tokens(text)
                for mode, fusion, weight in MODES:
                    q = None if mode == "keyword" else vec
                    head = (KEY, q, tokens, mode, 7, NOW, decay, 30.0, 1.0, 0.05)
                    old = [
                        tuple(r)
                        for r in await memory.pool.fetch(REFERENCE, *head, *flt, fusion, weight)
                    ]
                    search = MemoryQuery(
                        KEY,
                        q,
                        NOW,
                        top_k=7,
                        ranking=Ranking(
                            mode=mode,  # type: ignore[arg-type]
                            tokens=tuple(tokens),
                            fusion=fusion,  # type: ignore[arg-type]
                            keyword_weight=weight,
                        ),
                        where=SearchFilter(
                            importance_min=flt[0],
                            importance_max=flt[1],
                            scope=flt[2],
                            tags=tuple(flt[3]) if flt[3] else None,
                            category=flt[4],
                        ),
                        decay=DecayPolicy(enabled=decay),
                    )
                    sql, args = search_statement(search, 200)
                    new = [tuple(r) for r in await memory.pool.fetch(sql, *args)]
                    assert_same_ranking(new, old, mode, (decay, flt, text, mode, fusion))
                    compared[mode] += bool(old)
    assert min(compared.values()) >= 10


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


async def test_v8_ranks_like_v6_in_every_mode_fusion_filter_and_path(memory: Memory) -> None:
    """v8's own bodies (a partition without its HNSW index) and v6's, on short memories
    and on long Chinese ones whose rows match several query tokens, with duplicate and
    empty tokens; on a partition with its own index v8 is v6."""
    rng = random.Random(7)
    await fill(memory, KEY, 150, rng)
    await fill(memory, BIG, 320, rng)
    await _fill_long(memory, 150, rng)
    assert len((await maintain_ann_indexes(memory.pool, min_rows=300)).built) == 1
    dim = len(await memory.embedder.embed_query("x"))
    filters: list[tuple[Any, ...]] = [
        (None, None, None, None, None),
        (3, 8, None, None, None),
        (None, None, "group", ["猫", "茶"], None),
        (None, None, None, None, "rule"),
    ]
    queries: list[list[str] | None] = [
        search_tokens("北京 旅行 考试"),
        search_tokens("我喜欢猫和咖啡"),
        search_tokens("记忆"),
        ["猫", "猫", "", "喜欢", "喜欢"],  # duplicates and an empty token
        ["没有这个词"],
        [],
        None,
    ]
    compared = {"vector": 0, "keyword": 0, "hybrid": 0}
    v6, v8 = CALL.format(fn="search_memories_v6"), CALL.format(fn="search_memories_v8")
    n = 0
    async with memory.pool.acquire() as conn:
        for partition in (KEY, BIG, LONG):
            for decay in (True, False):
                for flt in filters:
                    for tokens in queries:
                        n += 1
                        vec = np.random.default_rng(n).standard_normal(dim).astype(np.float32)
                        for mode, fusion, weight in MODES:
                            q = None if mode == "keyword" else vec
                            args = (partition, q, tokens, mode, 7, NOW, decay, *flt, fusion)
                            old = [tuple(r) for r in await conn.fetch(v6, *args, weight)]
                            new = [tuple(r) for r in await conn.fetch(v8, *args, weight)]
                            where = (partition, decay, flt, tokens, mode, fusion)
                            assert_same_ranking(new, old, mode, where)
                            compared[mode] += (
                                bool(old) if mode == "vector" else any(r[14] for r in old)
                            )
    # rows with a keyword score were compared in every mode
    assert min(compared.values()) >= 20, compared


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
    """v8's expression for a row's matching lexemes against the plain one, on random token
    sets with the characters tsquery syntax and quoting care about: the same lexemes in the
    same (lexeme) order."""
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


# ---------------------------------------------------------------- the entry point


async def proconfig(conn: Any, function: str) -> list[str]:
    config = await conn.fetchval(
        "SELECT p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'amrita_memory' AND p.proname = $1",
        function,
    )
    return list(config or [])


async def body(conn: Any, function: str) -> str:
    return str(
        await conn.fetchval(
            "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'amrita_memory' AND p.proname = $1",
            function,
        )
    )


async def test_v8_plans_once_without_bitmap_scans_and_calls_one_body_per_mode(
    conn: asyncpg.Connection,
) -> None:
    assert await proconfig(conn, "search_memories_v8") == [
        "plan_cache_mode=force_generic_plan",
        "enable_bitmapscan=off",
    ]
    # the access log's statements are planned once too (they inherit the setting)
    assert await proconfig(conn, "recall_memories_v4") == ["plan_cache_mode=force_generic_plan"]
    v8 = await body(conn, "search_memories_v8")
    for callee in (
        "search_vector_exact_v5",
        "score_keyword_v8",
        "score_hybrid_rrf_v8",
        "score_hybrid_weighted_v8",
        "search_memories_v6",  # a partition with its own HNSW index: v6, candidates
    ):
        assert f"amrita_memory.{callee}(" in v8, callee


async def test_v6_plans_once_per_connection_with_one_plain_body_per_mode(
    conn: asyncpg.Connection,
) -> None:
    """The settings v6's speed rests on (a search re-planned on every call spent 0.31 ms of
    0.54 ms planning), and the bodies it dispatches to."""
    assert await proconfig(conn, "search_memories_v6") == ["plan_cache_mode=force_generic_plan"]
    v6 = await body(conn, "search_memories_v6")
    for callee in (
        "search_vector_exact_v5",
        "search_vector_ann_v5",
        "score_keyword_v6",
        "score_hybrid_rrf_v6",
        "score_hybrid_weighted_v6",
    ):
        assert f"amrita_memory.{callee}(" in v6, callee
    assert "score_memories_v" not in v6


async def test_the_bitmap_scan_switch_of_an_hnsw_partition_is_undone(memory: Memory) -> None:
    """The GIN statement of an HNSW partition turns bitmap scans on; the caller's session
    keeps its own setting whatever the search did inside."""
    await fill(memory, BIG, 320, random.Random(5))
    assert len((await maintain_ann_indexes(memory.pool, min_rows=300)).built) == 1
    async with memory.pool.acquire() as conn, conn.transaction():
        assert await conn.fetchval("SHOW enable_bitmapscan") == "on"
        hits = await conn.fetch(
            CALL.format(fn="search_memories_v8"),
            BIG, None, search_tokens("猫 记忆"), "keyword", 5, NOW, True,
            None, None, None, None, None, "rrf", 0.5,
        )  # fmt: skip
        assert hits
        assert await conn.fetchval("SHOW enable_bitmapscan") == "on"
        assert await conn.fetchval("SHOW plan_cache_mode") == "auto"


async def test_small_partitions_search_without_v6_but_not_without_v8(memory: Memory) -> None:
    """The store calls v8, and a partition without its own HNSW index never reaches v6."""
    await fill(memory, KEY, 10, random.Random(1))
    before = [h.record.id for h in await memory.memories.search(KEY, "记忆", top_k=3, now=NOW)]
    assert len(before) == 3
    signature = (
        "(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, "
        "integer, integer, text, text[], text, integer, text, float8, float8)"
    )
    # a throwaway database
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v6{signature}")
    after = [h.record.id for h in await memory.memories.search(KEY, "记忆", top_k=3, now=NOW)]
    assert after == before
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v8{signature}")
    with pytest.raises(Exception, match="search_memories_v8"):
        await memory.memories.search(KEY, "记忆", top_k=3, now=NOW)


async def test_a_row_updated_in_place_comes_back_with_its_new_content(memory: Memory) -> None:
    """v8 fetches the top k by the ctid its scan read (the same snapshot): an update makes
    a new row version elsewhere, and the search returns that version, not the old one."""
    rng = random.Random(9)
    await fill(memory, KEY, 40, rng)
    target = await memory.memories.add(
        partition_key=KEY, scope="user", content="小宋 周五 考试", now=NOW
    )
    for step in range(3):
        before = await memory.pool.fetchval(
            "SELECT ctid::text FROM amrita_memory.memory WHERE id = $1", target.id
        )
        await memory.memories.update(KEY, target.id, content=f"小宋 周五 考试 第{step}次")
        after = await memory.pool.fetchval(
            "SELECT ctid::text FROM amrita_memory.memory WHERE id = $1", target.id
        )
        assert after != before
        for mode in ("keyword", "hybrid"):
            hits = await memory.memories.search(KEY, "小宋 考试", top_k=3, now=NOW, mode=mode)
            found = [h.record for h in hits if h.record.id == target.id]
            assert [r.content for r in found] == [f"小宋 周五 考试 第{step}次"], mode


async def test_a_read_replica_statement_writes_nothing(conn: asyncpg.Connection) -> None:
    """search_unpaused runs on a hot standby: v8 must not write (its set_config is local
    to the call, which a read-only transaction allows)."""
    async with conn.transaction(readonly=True):
        rows = await conn.fetch(
            CALL.format(fn="search_memories_v8"),
            KEY, None, ["猫"], "keyword", 5, NOW, True,
            None, None, None, None, None, "rrf", 0.5,
        )  # fmt: skip
    assert rows == []


async def test_the_named_queries_call_v8_and_recall_v4() -> None:
    assert "amrita_memory.search_memories_v8(" in query("search_memories")
    assert "amrita_memory.recall_memories_v4(" in query("recall_memories")
    assert "amrita_memory.search_memories_v8(" in query("search_unpaused")


async def test_category_filter_inside_the_hnsw_scan(memory: Memory) -> None:
    """On an HNSW partition the category is a filter of the index scan itself, so a
    category search still finds its rows when none of them is among the nearest."""
    await fill(memory, BIG, 320, random.Random(3))
    rule = await memory.memories.add(
        partition_key=BIG, scope="group", content="群规：禁止刷屏", category="rule", now=NOW
    )
    assert len((await maintain_ann_indexes(memory.pool, min_rows=300)).built) == 1
    for mode in ("vector", "hybrid"):
        hits = await memory.memories.search(
            BIG, "今天天气", top_k=3, now=NOW, mode=mode, category="rule"
        )
        assert [h.record.id for h in hits] == [rule.id]


# ---------------------------------------------------------------- read_memory


async def test_read_memory_is_one_statement_pause_first_and_a_failed_log_keeps_the_hits(
    conn: asyncpg.Connection,
) -> None:
    """recall_memories_v4: the hits and their access log in one statement; a paused
    partition answers one status row and nothing is searched or logged; a failing log
    leaves the hits and says why in a status row."""
    q = unit([1, 0, 0, 0])
    cat = await insert(conn, "用户喜欢猫", q)
    search = search_args(
        MemoryQuery(KEY, None, NOW, top_k=3, ranking=Ranking(mode="keyword", tokens=("猫",)))
    )
    log = {"p_chat": KEY, "p_who": "1", "p_query_text": "猫", "p_surface": "tool"}
    args = {**search, **log, "p_keep": 20, "p_log": True}

    async def recall() -> list[asyncpg.Record]:
        return list(await conn.fetch(query("recall_memories"), *bind("recall_memories", args)))

    async def logged() -> int:
        return int(await conn.fetchval("SELECT count(*) FROM amrita_memory.memory_access"))

    rows = await recall()
    assert [(r["id"], r["paused"], r["log_error"]) for r in rows] == [(cat, False, None)]
    assert await logged() == 1
    await conn.execute(
        "INSERT INTO amrita_memory.paused_partition (partition_key, paused_at, paused_by) "
        "VALUES ($1, now(), 'test')",
        KEY,
    )
    rows = await recall()
    assert [(r["id"], r["paused"]) for r in rows] == [(None, True)]
    assert await logged() == 1
    await conn.execute("DELETE FROM amrita_memory.paused_partition")
    await conn.execute(
        "ALTER FUNCTION amrita_memory.log_access_v1(text[], text[], float8[], timestamptz, "
        "text, text, text, text, integer) RENAME TO log_access_broken"
    )
    rows = await recall()
    assert [r["id"] for r in rows] == [cat, None]
    assert "log_access_v1" in rows[1]["log_error"] and not rows[1]["paused"]
    assert await logged() == 1


async def test_recall_v4_answers_and_logs_every_hit_of_long_memories(memory: Memory) -> None:
    await _fill_long(memory, 40, random.Random(4))
    call = (
        "SELECT * FROM amrita_memory.recall_memories_v4(p_partition => $1, p_query => NULL,"
        " p_tokens => $2, p_mode => 'keyword', p_top_k => 5, p_now => $3, p_decay => true,"
        " p_base_days => 30, p_boost => 1, p_floor => 0.05, p_chat => $1, p_who => '7',"
        " p_query_text => 'q', p_surface => 'tool', p_keep => 20, p_log => true)"
    )
    tokens = search_tokens("喜欢猫")
    logged = "SELECT count(*) FROM amrita_memory.memory_access WHERE partition_key = $1"
    async with memory.pool.acquire() as conn:
        hits = await conn.fetch(call, LONG, tokens, NOW)
        assert len(hits) == 5 and all(h["id"] is not None for h in hits)
        search = await conn.fetch(
            CALL.format(fn="search_memories_v8"),
            LONG, None, tokens, "keyword", 5, NOW, True,
            None, None, None, None, None, "rrf", 0.5,
        )  # fmt: skip
        assert [h["id"] for h in hits] == [r["id"] for r in search]
        assert await conn.fetchval(logged, LONG) == 5  # each hit logged
        await conn.execute(
            "INSERT INTO amrita_memory.paused_partition (partition_key, paused_at, paused_by) "
            "VALUES ($1, now(), 'person:1')",
            LONG,
        )
        paused = await conn.fetch(call, LONG, tokens, NOW)
        assert [(r["id"], r["paused"]) for r in paused] == [(None, True)]
        assert await conn.fetchval(logged, LONG) == 5


# ---------------------------------------------------------------- the filters


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
    "SELECT * FROM amrita_memory.search_vector_exact_v5('p_7', '[1,2,3,4]', 5, '2026-06-01',"
    " true, 30, 1, 0.05, 4, 7, 'user', '{a}', NULL)"
)


async def _plan(conn: asyncpg.Connection, sql: str) -> str:
    return "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN (VERBOSE, COSTS OFF) {sql}"))


async def test_the_filter_function_inlines_into_the_exact_plan(conn: asyncpg.Connection) -> None:
    await conn.execute(FILL)
    await conn.execute("ANALYZE amrita_memory.memory")
    plan = await _plan(conn, EXACT)
    assert "memory_matches_v2" not in plan  # inlined: no function call per row
    # ...which reads one partition through a btree led by partition_key.
    assert re.search(r"Index (Scan|Cond).*\n?.*partition_key = 'p_7'", plan)
    assert "Seq Scan" not in plan
    assert "(m.importance >= 4) AND (m.importance <= 7)" in plan
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
    assert "memory_matches_v2" not in chroma
    assert "(m.importance >= 4) AND (m.importance <= 7)" in chroma
    assert "Seq Scan" not in chroma


async def test_the_filter_function_is_the_predicate_it_names(conn: asyncpg.Connection) -> None:
    """Every combination of NULL and set filters, on rows at the boundaries."""
    rows = [
        (i, s, t, c)
        for i in (1, 3, 4, 7, 8, 10)
        for s in ("user", "group")
        for t in ([], ["a"], ["a", "b"])
        for c in (None, "rule")
    ]
    filters = [
        (lo, hi, scope, tags, category)
        for lo in (None, 4)
        for hi in (None, 7)
        for scope in (None, "user")
        for tags in (None, ["b", "c"])
        for category in (None, "rule")
    ]
    for importance, scope, tags, category in rows:
        for lo, hi, want_scope, any_tags, want_category in filters:
            expected = (
                (lo is None or importance >= lo)
                and (hi is None or importance <= hi)
                and (want_scope is None or scope == want_scope)
                and (any_tags is None or bool(set(tags) & set(any_tags)))
                and (want_category is None or category == want_category)
            )
            got = await conn.fetchval(
                "SELECT amrita_memory.memory_matches_v2($1::smallint, $2, $3, $4, $5, $6, $7,"
                " $8, $9)",
                importance, scope, tags, category, lo, hi, want_scope, any_tags, want_category,
            )  # fmt: skip
            # a row without a category, one asked: NULL, which rejects it in WHERE as false does
            assert bool(got) is expected, (importance, scope, tags, category, lo, hi, want_scope)


async def test_a_query_of_another_dimension_is_refused_by_sqlstate(
    conn: asyncpg.Connection,
) -> None:
    for i in range(3):  # the first write through insert_memory records the dimension
        await conn.fetchrow(
            query("insert_memory"),
            KEY, "user", f"m{i}", [], 5, None, "user", None, np.full(8, i, dtype=np.float32),
            "fp", NOW, 100, [f"m{i}"], None, None, None,
        )  # fmt: skip
    assert await conn.fetchval("SELECT embed_dim FROM amrita_memory.store_meta") == 8
    args = (3, NOW, True, 30.0, 1.0, 0.05, None, None, None, None)
    # the named query in vector mode: tokens and mode before the rest
    tail = (None, 200, "rrf", 60.0, 0.5)
    named = query("search_memories")
    assert len(await conn.fetch(named, KEY, np.ones(8, np.float32), [], "vector", *args, *tail))
    other = np.ones(9, dtype=np.float32)
    for partition in (KEY, "QQPlatform_Private_empty"):  # refused even where no row would fail
        for mode in ("vector", "hybrid"):
            with pytest.raises(asyncpg.PostgresError) as info:
                await conn.fetch(named, partition, other, ["m1"], mode, *args, *tail)
            assert info.value.sqlstate == "AMF03"


# ---------------------------------------------------------------- named bindings


async def proc_args(conn: Any, function: str) -> tuple[set[str], set[str]]:
    """(every IN argument name, those without a default) of amrita_memory.<function>."""
    row = await conn.fetchrow(
        "SELECT p.proargnames, p.proargmodes::text[] AS proargmodes, p.pronargs, p.pronargdefaults "
        "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'amrita_memory' AND p.proname = $1",
        function,
    )
    assert row is not None, f"amrita_memory.{function} is not installed"
    modes = row["proargmodes"] or ["i"] * len(row["proargnames"])
    names = [n for n, m in zip(row["proargnames"], modes, strict=False) if m in ("i", "b")]
    required = names[: row["pronargs"] - row["pronargdefaults"]]
    return set(names), set(required)


@dataclass(frozen=True)
class Provider:
    protocol: str
    model: str
    base_url: str


async def test_named_bindings_match_the_sql_functions(conn: asyncpg.Connection) -> None:
    """Every named query that calls a function by argument name (``p_x => $n``) names
    only arguments the function has and every one it requires; the Python bindings send
    exactly the statement's names. Fails when either side changes alone."""
    checked = 0
    for name, item in catalogue().items():
        params = named_params(name)
        if not params:
            continue
        function = item.sql.split("amrita_memory.", 1)[1].split("(", 1)[0]
        names, required = await proc_args(conn, function)
        assert set(params) <= names, (name, sorted(set(params) - names))
        assert required <= set(params), (name, sorted(required - set(params)))
        checked += 1
    assert checked >= 1
    # the search binding: a MemoryQuery's arguments are the statement's, exactly
    args = search_args(MemoryQuery(KEY, None, NOW))
    assert set(args) == set(named_params("search_memories"))
    assert bind("search_memories", args)[0] == KEY
    with pytest.raises(ValueError, match="missing"):
        bind("search_memories", {k: v for k, v in args.items() if k != "p_floor"})
    with pytest.raises(ValueError, match="unknown"):
        bind("search_memories", {**args, "p_nope": 1})
    # the write bindings: a NewMemory's arguments are insert_memory's, write_memory's
    # are those plus the dedup window
    new = NewMemory(KEY, "user", "记忆", None, "fp", NOW)
    inserted = insert_args(new, Provider("hash", "m", ""), 10)
    assert set(inserted) == set(named_params("insert_memory"))
    assert set(inserted) | {"p_dedup_seconds"} == set(named_params("write_memory"))
    # and the read_memory statement takes the search's arguments and the log's
    assert set(search_args(MemoryQuery(KEY, None, NOW))) < set(named_params("recall_memories"))
