"""Stored embeddings are halfvec (migration 0062_halfvec): the columns after the upgrade, the
per-partition HNSW indexes converted both ways, every vector kept by the downgrade, and the
functions 0.14.1 calls during a rolling upgrade still running on the halfvec columns."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
import numpy as np

from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import register_vector_codec
from tests.support.data import bulk_insert

BEFORE = "0061_partition_count"
BIG = "QQPlatform_Group_7"
NOW = datetime(2026, 12, 1, tzinfo=UTC)
EMBEDDINGS = (
    ("memory", "embedding"),
    ("knowledge", "embedding"),
    ("reembed_staging", "embedding"),
)


async def _types(conn: asyncpg.Connection) -> dict[str, tuple[str, str]]:
    """table → (the embedding column's type, its storage)."""
    rows = await conn.fetch(
        "SELECT c.relname, format_type(a.atttypid, a.atttypmod) AS type, a.attstorage::text AS attstorage "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "WHERE c.relnamespace = 'amrita_memory'::regnamespace AND a.attname = 'embedding' "
        "AND c.relkind = 'r'"
    )
    return {r["relname"]: (r["type"], r["attstorage"]) for r in rows}


async def test_a_database_at_head_stores_halfvec(conn: asyncpg.Connection) -> None:
    types = await _types(conn)
    assert {t for t, _ in EMBEDDINGS} == set(types)
    assert {t: ty for t, (ty, _) in types.items()} == dict.fromkeys(types, "halfvec")
    # in the row (STORAGE MAIN, sql/tables.sql), which a type change would have reset
    assert types["memory"][1] == types["knowledge"][1] == "m"


async def _vectors(conn: asyncpg.Connection) -> dict[str, np.ndarray]:
    rows = await conn.fetch("SELECT id, embedding::vector AS v FROM amrita_memory.memory")
    return {r["id"]: r["v"] for r in rows}


async def _hnsw(
    conn: asyncpg.Connection, name: str, partition: str, dim: int, kind: str, options: str = ""
) -> None:
    """An HNSW index of one partition as maintenance builds it, recorded in ann_index."""
    await conn.execute(
        f"CREATE INDEX {name} ON amrita_memory.memory USING hnsw "
        f"((embedding::{kind}({dim})) {kind}_l2_ops){options} "
        f"WHERE partition_key = '{partition}' AND vector_dims(embedding) = {dim}"
    )
    await conn.execute(
        "INSERT INTO amrita_memory.ann_index (partition_key, dim, index_name, rows_at_build) "
        "VALUES ($1, $2, $3, 20)",
        partition,
        dim,
        name,
    )


async def _index(conn: asyncpg.Connection) -> str:
    return str(
        await conn.fetchval(
            "SELECT pg_get_indexdef(to_regclass('amrita_memory.' || quote_ident(a.index_name))) "
            "FROM amrita_memory.ann_index a"
        )
    )


async def test_the_upgrade_converts_rows_and_indexes_and_the_downgrade_keeps_every_vector(
    empty_db_dsn: str,
) -> None:
    await migrate.upgrade(empty_db_dsn, BEFORE)
    conn = await asyncpg.connect(empty_db_dsn)
    await register_vector_codec(conn)
    try:
        await bulk_insert(conn, count=300, created_at=NOW, importance=5, partitions=3, dim=16)
        await conn.execute(
            "INSERT INTO amrita_memory.knowledge (kid, title, summary, body, embedding, "
            "embed_fingerprint) VALUES ('0a1b2c3d', 't', 's', 'b', "
            "(SELECT embedding FROM amrita_memory.memory LIMIT 1), 'bulk')"
        )
        # an HNSW index as 0.14.1's maintenance built it (sql/queries/ann.sql then)
        await _hnsw(
            conn, "ix_memory_ann_0123", "QQPlatform_Private_1", 16, "vector",
            " WITH (m = 8, ef_construction = 32)",
        )  # fmt: skip
        exact = await _vectors(conn)
        assert {ty for ty, _ in (await _types(conn)).values()} == {"vector"}

        await migrate.upgrade(empty_db_dsn)
        assert {ty for ty, _ in (await _types(conn)).values()} == {"halfvec"}
        half = await _vectors(conn)
        assert half.keys() == exact.keys()
        for key, v in exact.items():
            # half precision: 11 significant bits, values in [0, 1)
            assert np.allclose(half[key], v, rtol=2**-10, atol=2**-24), key
        assert any(not np.array_equal(half[k], exact[k]) for k in exact)  # really halfvec
        index = await _index(conn)
        assert "halfvec_l2_ops" in index and "(embedding)::halfvec(16)" in index, index
        assert "m='8'" in index and "ef_construction='32'" in index, index
        # the knowledge vector too, read through the codec as float32
        k = await conn.fetchval("SELECT embedding FROM amrita_memory.knowledge")
        assert k.dtype == np.float32 and len(k) == 16

        await migrate.downgrade(empty_db_dsn, BEFORE)
        assert {ty for ty, _ in (await _types(conn)).values()} == {"vector"}
        assert (await _types(conn))["memory"][1] == "m"
        down = await _vectors(conn)
        assert down.keys() == half.keys()
        assert all(np.array_equal(down[k], half[k]) for k in half)  # f16 → f32 is exact
        index = await _index(conn)
        assert "vector_l2_ops" in index and "(embedding)::vector(16)" in index, index
        # 0.14.1's search runs again on the vector column (its own bodies restored)
        hits = await conn.fetch(
            "SELECT id FROM amrita_memory.search_memories_v8("
            "'QQPlatform_Private_1', (SELECT embedding FROM amrita_memory.memory "
            "WHERE partition_key = 'QQPlatform_Private_1' ORDER BY id LIMIT 1), NULL, "
            "'vector', 5, $1, true, 30, 1, 0.05)",
            NOW,
        )
        assert len(hits) == 5
    finally:
        await conn.close()


async def test_the_downgrade_forgets_an_index_too_wide_for_vector(empty_db_dsn: str) -> None:
    """HNSW indexes halfvec up to 4,000 dimensions, vector up to 2,000: a 3,072-d partition's
    index cannot go down with the column, so the downgrade drops it and its record (the
    partition is searched exactly) instead of failing."""
    await migrate.upgrade(empty_db_dsn)
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        await bulk_insert(conn, count=20, created_at=NOW, importance=5, partitions=1, dim=3072)
        await _hnsw(conn, "ix_memory_ann_wide", "QQPlatform_Private_0", 3072, "halfvec")
        await migrate.downgrade(empty_db_dsn, BEFORE)
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.ann_index") == 0
        assert await conn.fetchval("SELECT to_regclass('amrita_memory.ix_memory_ann_wide')") is None
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 20
    finally:
        await conn.close()


QUERY = "(SELECT embedding::vector FROM amrita_memory.memory WHERE partition_key = $1 LIMIT 1)"


async def test_the_functions_0_14_1_calls_run_on_the_halfvec_columns(
    conn: asyncpg.Connection,
) -> None:
    """0.14.1's processes keep running beside this release during a rolling upgrade and
    call these functions (sql/PREVIOUS_RELEASE.txt) with vector arguments, as its named
    queries do: their inserts store halfvec, their searches read it."""
    await bulk_insert(conn, count=40, created_at=NOW, importance=5, partitions=2, dim=8)
    key = "QQPlatform_Private_1"
    vec = np.linspace(0.1, 0.8, 8, dtype=np.float32)
    inserted = await conn.fetchrow(
        "SELECT * FROM amrita_memory.insert_memory_v6("
        "p_partition => $1, p_scope => 'user', p_content => '老版本写的', p_tags => '{}', "
        "p_importance => 5, p_category => NULL, p_source => 'auto', p_author => NULL, "
        "p_embedding => $2::vector, p_fingerprint => 'bulk', p_now => $3, p_cap => 1000, "
        "p_tokens => ARRAY['老'])",
        key,
        vec,
        NOW,
    )
    assert inserted is not None
    written = await conn.fetchrow(
        "SELECT * FROM amrita_memory.write_memory_v5("
        "p_partition => $1, p_scope => 'user', p_content => '老版本又写的', p_tags => '{}', "
        "p_importance => 5, p_category => NULL, p_source => 'auto', p_author => NULL, "
        "p_embedding => $2::vector, p_fingerprint => 'bulk', p_now => $3, p_cap => 1000, "
        "p_dedup_seconds => 0, p_tokens => ARRAY['又'])",
        key,
        vec[::-1].copy(),
        NOW,
    )
    assert written is not None
    stored = await conn.fetchval(
        "SELECT embedding FROM amrita_memory.memory WHERE content = '老版本写的'"
    )
    assert np.allclose(stored, vec, rtol=2**-10)

    for mode in ("vector", "keyword", "hybrid"):
        for fusion in ("rrf", "weighted"):
            hits = await conn.fetch(
                "SELECT id, content FROM amrita_memory.search_memories_v8("
                f"p_partition => $1, p_query => $2::vector, p_tokens => ARRAY['老'], "
                f"p_mode => '{mode}', p_top_k => 3, p_now => $3, p_decay => true, "
                "p_base_days => 30, p_boost => 1, p_floor => 0.05, p_fusion => $4)",
                key,
                vec,
                NOW,
                fusion,
            )
            assert hits[0]["content"] == "老版本写的", (mode, fusion)
    recalled = await conn.fetch(
        "SELECT id FROM amrita_memory.recall_memories_v4("
        "p_partition => $1, p_query => $2::vector, p_tokens => NULL, p_mode => 'vector', "
        "p_top_k => 3, p_now => $3, p_decay => true, p_base_days => 30, p_boost => 1, "
        "p_floor => 0.05)",
        key,
        vec,
        NOW,
    )
    assert len(recalled) == 3
    scored = await conn.fetch(
        f"SELECT id FROM amrita_memory.score_memories_v1($1, {QUERY}, NULL, 'vector', 3, $2, "
        "true, 30, 1, 0.05, NULL, NULL, NULL, NULL, NULL, 'rrf', 60, 0.5, NULL)",
        key,
        NOW,
    )
    assert len(scored) == 3
    block = await conn.fetch(
        f"SELECT kind FROM amrita_memory.memory_block_v2(ARRAY[$1], $1, ARRAY[$1], 20, "
        f"{QUERY}, 3, NULL, NULL)",
        key,
    )
    assert sum(r["kind"] == "relevant" for r in block) == 3, [r["kind"] for r in block]
    created = await conn.fetchval(
        "SELECT status FROM amrita_memory.knowledge_create_v2('0a1b2c3d', '标题', '摘要', "
        "'正文', $1::vector, 'bulk', 10000, $2, ARRAY['标'])",
        vec,
        NOW,
    )
    assert created == "created"
    found = await conn.fetch(
        "SELECT kid FROM amrita_memory.knowledge_search_v2($1::vector, ARRAY['标'], 'hybrid', 5)",
        vec,
    )
    assert [r["kid"] for r in found] == ["0a1b2c3d"]
