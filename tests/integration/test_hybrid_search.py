"""Keyword and hybrid ranking in SQL (search_memories_v8, sql/functions/search.sql): a
keyword finds what the vector cannot, the SQL fusion = its Python twin (domain/fusion.py),
the mode checks, the category filter, the HNSW path's keyword candidates, and the token
backfill."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.domain.decay import DecayPolicy
from amrita_memory_pg.domain.fusion import Candidate, rank_candidates
from amrita_memory_pg.domain.records import MemoryRecord, Ranking
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.maintenance.ann import maintain_ann_indexes
from amrita_memory_pg.maintenance.tokens import backfill_tokens
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.memories import record_from_row
from amrita_memory_pg.storage.queries import query
from tests.support.cli import run_cli

NOW = datetime(2026, 6, 1, tzinfo=UTC)
KEY = "QQPlatform_Private_1"
BIG = "QQPlatform_Group_9"
SEARCH = (
    "SELECT * FROM amrita_memory.search_memories_v8("
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 200, $16, 60, 0.5)"
)


def unit(values: list[float]) -> np.ndarray[Any, Any]:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


async def insert(conn: asyncpg.Connection, content: str, vector: Any, **kw: Any) -> str:
    row = await conn.fetchrow(
        query("insert_memory"),
        kw.get("partition", KEY),
        "user",
        content,
        [],
        kw.get("importance", 5),
        kw.get("category"),
        "user",
        None,
        vector,
        "fp",
        kw.get("now", NOW),
        1000,
        search_tokens(content),
        None,
        None,
        None,
    )
    assert row is not None
    return str(row["id"])


async def search(
    conn: Any, text: str, vector: Any, mode: str, *, top_k: int = 5, **kw: Any
) -> list[asyncpg.Record]:
    return list(
        await conn.fetch(
            SEARCH,
            kw.get("partition", KEY),
            vector,
            search_tokens(text),
            mode,
            top_k,
            NOW,
            kw.get("decay", True),
            30.0,
            1.0,
            0.05,
            None,
            None,
            None,
            None,
            kw.get("category"),
            kw.get("fusion", "rrf"),
        )
    )


async def test_keyword_wins_where_the_vector_cannot(conn: asyncpg.Connection) -> None:
    """An exact name and number: the memory holding them is FAR from the query vector
    (as when the embedding model misses them); keyword and hybrid still rank it first."""
    q = unit([1, 0, 0, 0, 0, 0, 0, 0])
    target = await insert(
        conn, "阿杰的新手机号尾号 2046，旧号码已经停机", unit([0, 0, 0, 0, 0, 0, 1, 1])
    )
    near = [
        await insert(conn, text, unit([1, 0.1 * i, 0.05, 0, 0, 0, 0, 0]))
        for i, text in enumerate(
            ["小王喜欢打篮球", "明天下雨记得带伞", "周末去看电影", "老周在学吉他", "晚饭吃了面条"]
        )
    ]
    text = "阿杰手机尾号 2046"
    vector = [r["id"] for r in await search(conn, text, q, "vector")]
    assert vector[0] in near and target not in vector[:3]
    keyword = await search(conn, text, None, "keyword")
    assert [r["id"] for r in keyword] == [target]  # only rows sharing a token
    assert keyword[0]["distance"] is None and keyword[0]["keyword_score"] > 0
    hybrid = await search(conn, text, q, "hybrid")
    assert hybrid[0]["id"] == target
    # (the weighted fusion does not promise this: a far vector loses half its weight)
    # a date and an English name, same story
    date = await insert(
        conn, "Emily's visa expires on 30 September 2025", unit([0, 0, 0, 0, 0, 1, 0, 0])
    )
    assert (await search(conn, "When does Emily's visa expire?", q, "hybrid"))[0]["id"] == date


async def test_bad_modes_are_refused_by_sqlstate(conn: asyncpg.Connection) -> None:
    q = unit([1, 0, 0, 0])
    await insert(conn, "一条记忆", q)
    for mode in ("fuzzy", "VECTOR", ""):
        with pytest.raises(asyncpg.PostgresError) as bad:
            await search(conn, "记忆", q, mode)
        assert bad.value.sqlstate == "22023"
    with pytest.raises(asyncpg.PostgresError) as fusion:
        await search(conn, "记忆", q, "hybrid", fusion="max")
    assert fusion.value.sqlstate == "22023"
    for mode in ("vector", "hybrid"):  # these need the query vector
        with pytest.raises(asyncpg.PostgresError) as missing:
            await search(conn, "记忆", None, mode)
        assert missing.value.sqlstate == "22023"
    assert len(await search(conn, "记忆", None, "keyword")) == 1
    assert await search(conn, "", None, "keyword") == []  # no token, no keyword hit


async def test_category_filter(conn: asyncpg.Connection) -> None:
    q = unit([1, 0, 0, 0])
    pref = await insert(conn, "喜欢喝茉莉花茶", q, category="preference")
    await insert(conn, "茉莉花茶要用八十度的水泡", q, category="knowledge")
    for mode in ("vector", "keyword", "hybrid"):
        got = await search(conn, "茉莉花茶", q, mode, category="preference")
        assert [r["id"] for r in got] == [pref]


WORDS = ["猫", "狗", "茶", "山", "咖啡", "北京", "上海", "电影", "音乐", "旅行", "考试", "生日"]


async def fill(mem: Memory, partition: str, n: int, rng: random.Random) -> None:
    for i in range(n):
        words = " ".join(rng.sample(WORDS, 3))
        await mem.memories.add(
            partition_key=partition,
            scope=rng.choice(["user", "group"]),
            content=f"记忆 {i} {words} {rng.randint(1, 999)}",
            tags=rng.sample(["猫", "狗", "茶", "山"], rng.randint(0, 2)),
            importance=rng.randint(1, 10),
            now=NOW - timedelta(days=rng.uniform(-2, 400)),
        )


async def test_the_sql_fusion_is_the_python_one(memory: Memory) -> None:
    """The exact path's hybrid and keyword rankings are the Python fusion's on the SQL's
    own inputs (distances and BM25 scores). Vector mode against the reference's formula:
    test_search_sql.py."""
    rng = random.Random(5)
    await fill(memory, KEY, 120, rng)
    text = "北京 旅行 考试"
    tokens = search_tokens(text)
    vec = await memory.embedder.embed_query(text)
    policy = DecayPolicy()

    async def rows(mode: str, fusion: str = "rrf") -> list[asyncpg.Record]:
        return list(
            await memory.pool.fetch(
                SEARCH, KEY, vec, tokens, mode, 1000, NOW, True, 30.0, 1.0, 0.05,
                None, None, None, None, None, fusion,
            )
        )  # fmt: skip

    distance = {r["id"]: r["distance"] for r in await rows("vector")}
    bm25 = {r["id"]: r["keyword_score"] for r in await rows("keyword")}
    records: dict[str, MemoryRecord] = {r["id"]: record_from_row(r) for r in await rows("vector")}
    candidates = [Candidate(rec, distance[i], bm25.get(i)) for i, rec in records.items()]
    assert 10 < len(bm25) < len(records)
    for fusion in ("rrf", "weighted"):
        sql = await rows("hybrid", fusion)
        py = rank_candidates(
            candidates,
            ranking=Ranking(mode="hybrid", tokens=tuple(tokens), fusion=fusion),  # type: ignore[arg-type]
            top_k=1000,
            now=NOW,
            decay=policy,
        )
        assert [r["id"] for r in sql] == [h.record.id for h in py]
        for r, h in zip(sql, py, strict=True):
            assert r["decay_score"] == pytest.approx(h.decay_score, rel=1e-12)
    keyword_sql = await rows("keyword")
    keyword_py = rank_candidates(
        [Candidate(c.record, None, c.bm25) for c in candidates],  # keyword mode: no vector
        ranking=Ranking(mode="keyword", tokens=tuple(tokens)),
        top_k=1000,
        now=NOW,
        decay=policy,
    )
    assert [r["id"] for r in keyword_sql] == [h.record.id for h in keyword_py]


async def test_the_hnsw_path_finds_keyword_matches_the_index_misses(memory: Memory) -> None:
    rng = random.Random(9)
    await fill(memory, BIG, 320, rng)
    target = await memory.memories.add(
        partition_key=BIG, scope="group", content="Zorblax 的门禁密码是 918273", now=NOW
    )
    assert len((await maintain_ann_indexes(memory.pool, min_rows=300)).built) == 1
    hits = await memory.memories.search(BIG, "Zorblax 门禁密码 918273", top_k=3, now=NOW)
    assert hits[0].record.id == target.id
    keyword = await memory.memories.search(BIG, "918273", top_k=3, now=NOW, mode="keyword")
    assert [h.record.id for h in keyword] == [target.id]


async def test_tokens_are_written_updated_and_backfilled(memory: Memory) -> None:
    store = memory.memories
    first = await store.add(
        partition_key=KEY, scope="user", content="小宋的科目二考试在三月", now=NOW
    )
    tokens = await memory.pool.fetchval(
        "SELECT tsvector_to_array(search_tokens) FROM amrita_memory.memory WHERE id = $1", first.id
    )
    assert sorted(tokens) == sorted(search_tokens(first.content))
    # an edit of the text replaces them; an edit of the tags keeps them
    await store.update(KEY, first.id, content="小宋的科目三考试在五月", now=NOW)
    await store.update(KEY, first.id, tags=["驾照"], now=NOW)
    tokens = await memory.pool.fetchval(
        "SELECT tsvector_to_array(search_tokens) FROM amrita_memory.memory WHERE id = $1", first.id
    )
    assert sorted(tokens) == sorted(search_tokens("小宋的科目三考试在五月"))
    # rows without tokens (restored from a JSONL backup)
    for i in range(12):
        await store.add(partition_key=KEY, scope="user", content=f"旧记忆 {i} 生日蛋糕", now=NOW)
    await memory.pool.execute("UPDATE amrita_memory.memory SET search_tokens = NULL")
    assert await store.search(KEY, "生日蛋糕", mode="keyword", now=NOW) == []
    part = await backfill_tokens(memory.pool, batch_size=5, max_batches=1)
    assert (part.tokenized, part.remaining) == (5, 8)  # resumable: a later run goes on
    rest = await backfill_tokens(memory.pool, batch_size=5)
    assert (rest.tokenized, rest.remaining) == (8, 0)
    assert len(await store.search(KEY, "生日蛋糕", mode="keyword", top_k=50, now=NOW)) == 12
    wrong = await memory.pool.fetchval(
        "SELECT count(*) FROM amrita_memory.memory WHERE search_tokens IS NULL"
    )
    assert wrong == 0
    again = await backfill_tokens(memory.pool)
    assert (again.tokenized, again.remaining) == (0, 0)


async def test_a_retokenization_walks_every_partition_page_by_page(memory: Memory) -> None:
    """The re-tokenizing walk pages in the primary key's order, (partition_key, id) keyset:
    every memory of every partition once, however the pages fall across partitions."""
    keys = ["QQPlatform_Group_20002", KEY, "a/b"]
    for i in range(13):
        await memory.memories.add(
            partition_key=keys[i % 3], scope="user", content=f"记忆 {i} 生日蛋糕", now=NOW
        )
    await memory.pool.execute("UPDATE amrita_memory.memory SET search_tokens = 'stale'")
    done = await backfill_tokens(memory.pool, batch_size=2, retokenize=True)
    assert (done.tokenized, done.remaining) == (13, 0)
    rows = await memory.pool.fetch(
        "SELECT content, tsvector_to_array(search_tokens) AS t FROM amrita_memory.memory"
    )
    assert len(rows) == 13
    assert all(sorted(r["t"]) == sorted(search_tokens(r["content"])) for r in rows)


async def test_the_cli_backfills_and_retokenizes(memory: Memory, db_dsn: str) -> None:
    for i in range(3):
        await memory.memories.add(partition_key=KEY, scope="user", content=f"记忆 {i}", now=NOW)
    await memory.pool.execute("UPDATE amrita_memory.memory SET search_tokens = NULL")
    env = {"DATABASE_URL": db_dsn, "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash"}
    done = run_cli("tokens", "backfill", env=env)
    assert done.returncode == 0, done.stderr
    assert "tokenized 3 memories; 0 still without tokens" in done.stdout
    again = run_cli("tokens", "backfill", "--all", env=env)
    assert "tokenized 3 memories; 0 still without tokens" in again.stdout
