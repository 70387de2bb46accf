"""search_memories_v7 / recall_memories_v3 (0.7.0: keyword and hybrid over target; retired
by 0051_retire_release9, installed again here by the ``retired_sql`` fixture).

Parity with release 4 is test_search_v5.py's (the named query it compares is v8's now).
Here: v7 ranks exactly like v6 in every mode, fusion, filter and path (the same rows in
the same order, scores to the last bit or so: BM25 sums a row's lexemes in lexeme order
now); the settings v7's speed rests on; the bitmap-scan switch it turns on for its GIN
statement is undone when it returns; rows updated in place (a new row version, a new
ctid) come back with their new content. (Which release the named queries call:
test_search_v8.py.)
"""

from __future__ import annotations

import random
from typing import Any

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.maintenance.ann import maintain_ann_indexes
from amrita_memory_pg.memory import Memory
from tests.integration.test_hybrid_search import BIG, KEY, NOW, fill

CALL = (
    "SELECT * FROM amrita_memory.{fn}($1, $2, $3, $4, $5, $6, $7, 30, 1, 0.05, "
    "$8, $9, $10, $11, $12, 200, $13, 60, $14)"
)


async def proconfig(conn: Any, function: str) -> list[str]:
    config = await conn.fetchval(
        "SELECT p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'amrita_memory' AND p.proname = $1",
        function,
    )
    return list(config or [])


async def assert_entry_point(conn: Any, search: str, recall: str, bodies: str) -> None:
    """A search entry point's settings (generic plans, no bitmap scans), its recall's, and
    what it calls: the exact vector body, its own keyword and hybrid bodies (``bodies``: the
    version suffix), and v6 for a partition with its own HNSW index."""
    assert await proconfig(conn, search) == [
        "plan_cache_mode=force_generic_plan",
        "enable_bitmapscan=off",
    ]
    # the access log's statements are planned once too (they inherit the setting)
    assert await proconfig(conn, recall) == ["plan_cache_mode=force_generic_plan"]
    body = await conn.fetchval(
        "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'amrita_memory' AND p.proname = $1",
        search,
    )
    for callee in (
        "search_vector_exact_v5",
        f"score_keyword_{bodies}",
        f"score_hybrid_rrf_{bodies}",
        f"score_hybrid_weighted_{bodies}",
        "search_memories_v6",  # a partition with its own HNSW index: v6, candidates
    ):
        assert f"amrita_memory.{callee}(" in body, callee


@pytest.mark.usefixtures("retired_sql")  # retired by 0051, re-installed as released
async def test_v7_ranks_like_v6_in_every_mode_fusion_filter_and_path(memory: Memory) -> None:
    rng = random.Random(7)
    await fill(memory, KEY, 150, rng)
    await fill(memory, BIG, 320, rng)
    assert len((await maintain_ann_indexes(memory.pool, min_rows=300)).built) == 1
    dim = len(await memory.embedder.embed_query("x"))
    filters: list[tuple[Any, ...]] = [
        (None, None, None, None, None),
        (3, 8, None, None, None),
        (None, None, "group", ["猫", "茶"], None),
        (None, None, None, None, "rule"),
    ]
    compared = {"vector": 0, "keyword": 0, "hybrid": 0}
    v6, v7 = CALL.format(fn="search_memories_v6"), CALL.format(fn="search_memories_v7")
    n = 0
    async with memory.pool.acquire() as conn:
        for partition in (KEY, BIG):
            for decay in (True, False):
                for flt in filters:
                    for text in ("北京 旅行 考试", "猫 咖啡", "记忆", "没有这个词", ""):
                        n += 1
                        vec = np.random.default_rng(n).standard_normal(dim).astype(np.float32)
                        tokens = search_tokens(text)
                        for mode, fusion, weight in (
                            ("vector", "rrf", 0.5),
                            ("keyword", "rrf", 0.5),
                            ("hybrid", "rrf", 0.5),
                            ("hybrid", "weighted", 0.3),
                        ):
                            q = None if mode == "keyword" else vec
                            args = (partition, q, tokens, mode, 7, NOW, decay, *flt, fusion)
                            old = [tuple(r) for r in await conn.fetch(v6, *args, weight)]
                            new = [tuple(r) for r in await conn.fetch(v7, *args, weight)]
                            where = (partition, decay, flt, text, mode, fusion)
                            assert [r[:12] for r in new] == [r[:12] for r in old], where
                            for a, b in zip(new, old, strict=True):
                                if mode == "vector":  # the same function: release 3's scores
                                    assert a[12:] == b[12:], where
                                else:
                                    assert a[12:] == pytest.approx(b[12:], rel=1e-12), where
                            compared[mode] += bool(old)
    assert min(compared.values()) >= 20


@pytest.mark.usefixtures("retired_sql")  # retired by 0051, re-installed as released
async def test_plans_made_once_without_bitmap_scans_and_the_switch_is_undone(
    memory: Memory,
) -> None:
    async with memory.pool.acquire() as conn:
        await assert_entry_point(conn, "search_memories_v7", "recall_memories_v3", "v7")
    # the GIN statement of an HNSW partition turns bitmap scans on; the caller's session
    # keeps its own setting whatever v7 did inside
    rng = random.Random(5)
    await fill(memory, BIG, 320, rng)
    assert len((await maintain_ann_indexes(memory.pool, min_rows=300)).built) == 1
    async with memory.pool.acquire() as conn, conn.transaction():
        assert await conn.fetchval("SHOW enable_bitmapscan") == "on"
        hits = await conn.fetch(
            CALL.format(fn="search_memories_v7"),
            BIG, None, search_tokens("猫 记忆"), "keyword", 5, NOW, True,
            None, None, None, None, None, "rrf", 0.5,
        )  # fmt: skip
        assert hits
        assert await conn.fetchval("SHOW enable_bitmapscan") == "on"
        assert await conn.fetchval("SHOW plan_cache_mode") == "auto"


async def test_a_row_updated_in_place_comes_back_with_its_new_content(memory: Memory) -> None:
    """v7 fetches the top k by the ctid its scan read (the same snapshot): an update makes
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


@pytest.mark.usefixtures("retired_sql")  # retired by 0051, re-installed as released
async def test_a_read_replica_statement_writes_nothing(conn: asyncpg.Connection) -> None:
    """search_unpaused runs on a hot standby: v7 must not write (its set_config is local
    to the call, which a read-only transaction allows)."""
    async with conn.transaction(readonly=True):
        rows = await conn.fetch(
            CALL.format(fn="search_memories_v7"),
            KEY, None, ["猫"], "keyword", 5, NOW, True,
            None, None, None, None, None, "rrf", 0.5,
        )  # fmt: skip
    assert rows == []
