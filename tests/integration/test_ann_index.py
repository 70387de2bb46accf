"""Large partitions: a partial HNSW index per partition, used by search, invisible to the rest."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.maintenance.ann import keyword_index_name, maintain_ann_indexes
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import load_settings
from tests.support.data import bulk_insert

BIG = "QQPlatform_Group_777"
SMALL = "QQPlatform_Private_1"
TOPICS = ["猫", "狗", "咖啡", "茶", "爬山", "游泳", "编程", "音乐", "电影", "旅行", "北京", "上海"]


@pytest.fixture
async def memory(db_dsn: str, tmp_path: Path) -> Memory:
    settings = load_settings(
        env={},
        read_default_files=False,
        overrides={
            "database.url": db_dsn,
            "data_dir": str(tmp_path),
            "embedding.protocol": "hash",
            "per_session_memory_limit": 100_000,
            "retrieval.ann_min_rows": 200,
        },
    )
    async with open_memory(settings) as mem:
        yield mem  # type: ignore[misc]


async def _fill(mem: Memory) -> None:
    rng = random.Random(7)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(400):
        a, b = rng.sample(TOPICS, 2)
        await mem.memories.add(
            partition_key=BIG,
            scope="group",
            content=f"群友{i} 喜欢 {a} 和 {b}",
            importance=rng.choice([3, 5, 8]),
            now=now - timedelta(days=rng.randint(0, 60)),
        )
    for i in range(20):
        await mem.memories.add(
            partition_key=SMALL, scope="user", content=f"我 喜欢 {TOPICS[i % 12]}", now=now
        )


async def _idx_scans(mem: Memory, name: str) -> int:
    return int(
        await mem.pool.fetchval(
            "SELECT coalesce(idx_scan, 0) FROM pg_stat_user_indexes WHERE indexrelname = $1", name
        )
        or 0
    )


async def test_big_partitions_get_an_index_that_search_uses(memory: Memory) -> None:
    await _fill(memory)
    now = datetime(2026, 1, 2, tzinfo=UTC)
    exact = await memory.memories.search(BIG, "喜欢 咖啡 和 茶", top_k=10, now=now)

    report = await maintain_ann_indexes(memory.pool, min_rows=200)
    assert len(report.built) == 1 and report.dropped == []
    name = report.built[0]
    row = await memory.pool.fetchrow(
        "SELECT a.partition_key, a.dim, i.indisvalid FROM amrita_memory.ann_index a "
        "JOIN pg_class c ON c.relname = a.index_name JOIN pg_index i ON i.indexrelid = c.oid"
    )
    assert (row["partition_key"], row["dim"], row["indisvalid"]) == (BIG, 384, True)

    before = await _idx_scans(memory, name)
    approx = await memory.memories.search(BIG, "喜欢 咖啡 和 茶", top_k=10, now=now)
    for _ in range(50):  # statistics are flushed by the backend shortly after the query
        if await _idx_scans(memory, name) > before:
            break
        await asyncio.sleep(0.1)
    assert await _idx_scans(memory, name) > before, "the HNSW index was not used"
    # Candidates come from the index and are re-ranked by the same ranking score (the
    # default mode's `score`; `decay_score` is the reference's formula).
    overlap = {h.record.id for h in exact} & {h.record.id for h in approx}
    assert len(overlap) >= 8
    assert [h.score for h in approx] == sorted((h.score or 0.0 for h in approx), reverse=True)

    # Filters on top of the index still return enough rows (iterative scan).
    high = await memory.memories.search(BIG, "喜欢 咖啡", top_k=20, importance=(8, 10), now=now)
    assert len(high) == 20 and all(h.record.importance >= 8 for h in high)

    # The small partition keeps the exact scan.
    small = await memory.memories.search(SMALL, "喜欢 猫", top_k=3, now=now)
    assert small[0].record.content == "我 喜欢 猫"

    # Running maintenance again changes nothing.
    again = await maintain_ann_indexes(memory.pool, min_rows=200)
    assert again.built == [] and again.kept == [name]


async def test_vectors_of_another_dimension_do_not_break_writes(memory: Memory) -> None:
    await _fill(memory)
    await maintain_ann_indexes(memory.pool, min_rows=200)
    # A row with another dimension (e.g. written during a model change) is outside the
    # partial index's predicate, so the ::vector(384) cast is never applied to it.
    await memory.pool.execute(
        "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance, embedding, embed_fingerprint) "
        "VALUES ($1, 'group', 'other model', 5, $2, 'other')",
        BIG,
        [0.5] * 16,
    )
    assert (
        await memory.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.memory WHERE vector_dims(embedding) = 16"
        )
        == 1
    )


async def test_shrunken_partitions_lose_their_index(memory: Memory) -> None:
    await _fill(memory)
    built = await maintain_ann_indexes(memory.pool, min_rows=200)
    await memory.pool.execute(
        "DELETE FROM amrita_memory.memory WHERE partition_key = $1 AND id IN "
        "(SELECT id FROM amrita_memory.memory WHERE partition_key = $1 ORDER BY id LIMIT 350)",
        BIG,
    )
    report = await maintain_ann_indexes(memory.pool, min_rows=200)
    assert report.dropped == built.built
    assert await memory.pool.fetchval("SELECT count(*) FROM amrita_memory.ann_index") == 0
    assert (
        await memory.pool.fetchval("SELECT to_regclass('amrita_memory.' || $1)", built.built[0])
        is None
    )
    hits = await memory.memories.search(BIG, "喜欢 咖啡", top_k=5)
    assert len(hits) == 5


GIN_INDEXES = (
    "SELECT c.relname::text, pg_get_expr(i.indpred, i.indrelid) FROM pg_index i"
    " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
    " WHERE i.indrelid = 'amrita_memory.memory'::regclass AND a.amname = 'gin'"
)


async def test_a_big_partition_gets_its_own_keyword_index_and_no_index_covers_the_rest(
    memory: Memory,
) -> None:
    """No GIN index over the whole table (small partitions
    are scored row by row; every write paid for it); the HNSW path's keyword candidates
    come from the big partition's own GIN index, built and dropped with its HNSW index."""
    await _fill(memory)
    assert await memory.pool.fetch(GIN_INDEXES) == []
    now = datetime(2026, 1, 2, tzinfo=UTC)
    report = await maintain_ann_indexes(memory.pool, min_rows=200)
    name = keyword_index_name(BIG)
    assert report.keyword_built == [name] and report.keyword_dropped == []
    [(index, predicate)] = [tuple(r) for r in await memory.pool.fetch(GIN_INDEXES)]
    assert index == name and BIG in predicate

    # the HNSW path's keyword statement uses it, in keyword and hybrid mode, once the table
    # has statistics (autovacuum's analyze gives a growing table them; a table never
    # analysed keeps the partition's rows scan)
    await memory.pool.execute("ANALYZE amrita_memory.memory")
    for mode in ("keyword", "hybrid"):
        before = await _idx_scans(memory, name)
        # a selective token (one row has it): the planner's choice is the index
        hits = await memory.memories.search(BIG, "123", top_k=5, now=now, mode=mode)
        assert "群友123 " in hits[0].record.content
        for _ in range(50):  # statistics are flushed by the backend shortly after the query
            if await _idx_scans(memory, name) > before:
                break
            await asyncio.sleep(0.1)
        assert await _idx_scans(memory, name) > before, f"{mode}: the keyword index was not used"

    # an index changes the plan, not the answer: the same hits without it
    with_index = await memory.memories.search(
        BIG, "喜欢 咖啡 和 茶", top_k=10, now=now, mode="keyword"
    )
    await memory.pool.execute(f"DROP INDEX amrita_memory.{name}")
    without = await memory.memories.search(
        BIG, "喜欢 咖啡 和 茶", top_k=10, now=now, mode="keyword"
    )
    assert [(h.record.id, h.score) for h in with_index] == [(h.record.id, h.score) for h in without]

    # maintenance builds a missing one again, and keeps it on the next run
    again = await maintain_ann_indexes(memory.pool, min_rows=200)
    assert again.keyword_built == [name] and again.kept == report.built
    assert (await maintain_ann_indexes(memory.pool, min_rows=200)).keyword_built == []

    # the partition shrinks: its keyword index goes with its HNSW index
    await memory.pool.execute(
        "DELETE FROM amrita_memory.memory WHERE partition_key = $1 AND id IN "
        "(SELECT id FROM amrita_memory.memory WHERE partition_key = $1 ORDER BY id LIMIT 350)",
        BIG,
    )
    shrunk = await maintain_ann_indexes(memory.pool, min_rows=200)
    assert shrunk.keyword_dropped == [name]
    assert await memory.pool.fetch(GIN_INDEXES) == []


async def test_an_invalid_keyword_index_is_built_again(memory: Memory) -> None:
    """A CONCURRENTLY build that failed leaves an INVALID index: maintenance replaces it."""
    await _fill(memory)
    await maintain_ann_indexes(memory.pool, min_rows=200)
    name = keyword_index_name(BIG)
    await memory.pool.execute(
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass",
        f"amrita_memory.{name}",
    )
    report = await maintain_ann_indexes(memory.pool, min_rows=200)
    assert report.keyword_built == [name]
    valid = await memory.pool.fetchval(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = $1::regclass", f"amrita_memory.{name}"
    )
    assert valid is True


async def test_two_maintenance_runs_at_once_build_each_index_once(memory: Memory) -> None:
    """Two processes (here two connections) maintaining the indexes at the same moment:
    neither fails, and each index exists once, valid (an index the other is still building
    is not taken for a failed build and dropped)."""
    await _fill(memory)
    reports = await asyncio.gather(
        maintain_ann_indexes(memory.pool, min_rows=200),
        maintain_ann_indexes(memory.pool, min_rows=200),
    )
    assert all(r.dropped == [] and r.keyword_dropped == [] for r in reports)
    rows = await memory.pool.fetch(
        "SELECT c.relname::text AS name, i.indisvalid AS valid FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = 'amrita_memory.memory'::regclass"
        "   AND (c.relname LIKE 'ix\\_memory\\_ann\\_%' OR c.relname LIKE 'ix\\_memory\\_kw\\_%')"
    )
    assert sorted((r["name"].startswith("ix_memory_kw_"), r["valid"]) for r in rows) == [
        (False, True),
        (True, True),
    ]
    assert await memory.pool.fetchval("SELECT count(*) FROM amrita_memory.ann_index") == 1


async def test_an_index_over_vector_is_built_again_over_halfvec(memory: Memory) -> None:
    """0.14.1's maintenance, running beside this release during a rolling upgrade, builds
    its index over embedding::vector(n): no search of this release can use that one."""
    await _fill(memory)
    name = "ix_memory_ann_old_kind"
    await memory.pool.execute(
        f"CREATE INDEX {name} ON amrita_memory.memory USING hnsw "
        "((embedding::vector(384)) vector_l2_ops) "
        f"WHERE partition_key = '{BIG}' AND vector_dims(embedding) = 384"
    )
    await memory.pool.execute(
        "INSERT INTO amrita_memory.ann_index (partition_key, dim, index_name, rows_at_build) "
        "VALUES ($1, 384, $2, 400)",
        BIG,
        name,
    )
    report = await maintain_ann_indexes(memory.pool, min_rows=200)
    assert report.dropped == [name] and len(report.built) == 1 and report.kept == []
    rebuilt = report.built[0]
    definition = await memory.pool.fetchval(
        "SELECT pg_get_indexdef(to_regclass('amrita_memory.' || $1))", rebuilt
    )
    assert "halfvec_l2_ops" in definition and "(embedding)::halfvec(384)" in definition
    assert await memory.pool.fetchval("SELECT to_regclass('amrita_memory.' || $1)", name) is None
    before = await _idx_scans(memory, rebuilt)
    await memory.memories.search(BIG, "喜欢 咖啡", top_k=5, now=datetime(2026, 1, 2, tzinfo=UTC))
    for _ in range(50):
        if await _idx_scans(memory, rebuilt) > before:
            break
        await asyncio.sleep(0.1)
    assert await _idx_scans(memory, rebuilt) > before, "the rebuilt index was not used"
    assert (await maintain_ann_indexes(memory.pool, min_rows=200)).kept == [rebuilt]


async def test_a_partition_of_vectors_too_wide_for_hnsw_keeps_the_exact_search(
    memory: Memory,
) -> None:
    """HNSW indexes halfvec up to 4,000 dimensions: 3,072-d vectors (too wide as vector)
    get an index, 4,001-d ones are reported and left to the exact search, and the other
    partitions' indexes are still built."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for dim in (3072, 4001):
        await bulk_insert(
            memory.pool,
            count=200,
            created_at=now,
            importance=5,
            partitions=1,
            partition_prefix=f"QQPlatform_Group_{dim}_",
            dim=dim,
        )
    report = await maintain_ann_indexes(memory.pool, min_rows=200)
    assert report.too_wide == ["QQPlatform_Group_4001_0 (4001 dimensions)"]
    assert await memory.pool.fetchval(
        "SELECT array_agg(partition_key || '/' || dim) FROM amrita_memory.ann_index"
    ) == ["QQPlatform_Group_3072_0/3072"]
    assert len(report.built) == 1
