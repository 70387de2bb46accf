"""Migration 0017_kb_hybrid on a knowledge base written by the previous release: the
entries survive both ways, arrive without search tokens (vector-only until the backfill),
the backfill tokenizes them, and a downgrade removes the columns and release 2."""

from __future__ import annotations

import asyncpg
from alembic.script import ScriptDirectory

from amrita_memory_pg.maintenance.tokens import backfill_tokens
from amrita_memory_pg.storage.pg import migrate

REVISION = "0017_kb_hybrid"
INSERT = """
INSERT INTO amrita_memory.knowledge (kid, title, summary, body, embedding, embed_fingerprint)
VALUES ($1, $2, $3, $4, '[1,0,0]'::vector, 'fp')
"""
COLUMNS = """
SELECT array_agg(column_name::text ORDER BY column_name) FROM information_schema.columns
 WHERE table_schema = 'amrita_memory' AND table_name = 'knowledge'
   AND column_name IN ('search_tokens', 'search_len')
"""
FUNCTIONS = """
SELECT array_agg(p.proname::text ORDER BY p.proname) FROM pg_proc p
  JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'amrita_memory' AND p.proname LIKE 'knowledge_%'
   AND p.proname ~ '_v2$|set_tokens'
"""


def before() -> str:
    """The revision 0017 follows (re-chained when migrations are merged)."""
    script = ScriptDirectory.from_config(migrate.alembic_config())
    down = script.get_revision(REVISION).down_revision
    assert isinstance(down, str)
    return down


async def test_entries_survive_and_are_tokenized_by_the_backfill(empty_db_dsn: str) -> None:
    await migrate.upgrade(empty_db_dsn, before())
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        await conn.execute(INSERT, "0a1b2c3d", "设备档案", "办公设备", "型号 XJ-4471 保修 36 个月")
        await conn.execute(INSERT, "0a1b2c3e", "报销", "差旅报销", "先填申请单")
        assert await conn.fetchval(COLUMNS) is None
    finally:
        await conn.close()

    await migrate.upgrade(empty_db_dsn, REVISION)
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        assert await conn.fetchval(COLUMNS) == ["search_len", "search_tokens"]
        assert await conn.fetchval(FUNCTIONS) == [
            "knowledge_create_v2",
            "knowledge_search_v2",
            "knowledge_set_tokens_v1",
            "knowledge_update_v2",
        ]
        untokenized = "SELECT count(*) FROM amrita_memory.knowledge WHERE search_tokens IS NULL"
        assert await conn.fetchval(untokenized) == 2
        keyword = (
            "SELECT kid FROM amrita_memory.knowledge_search_v2(NULL, ARRAY['4471'], 'keyword', 5)"
        )
        assert await conn.fetch(keyword) == []  # found by the vector side only, for now
        pool = await asyncpg.create_pool(empty_db_dsn, min_size=1, max_size=2)
        try:
            report = await backfill_tokens(pool)
        finally:
            await pool.close()
        assert (report.knowledge_tokenized, report.knowledge_remaining) == (2, 0)
        assert [r["kid"] for r in await conn.fetch(keyword)] == ["0a1b2c3d"]
        assert await conn.fetchval("SELECT min(search_len) FROM amrita_memory.knowledge") > 0
    finally:
        await conn.close()

    await migrate.downgrade(empty_db_dsn, before())
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        assert await conn.fetchval(COLUMNS) is None
        assert await conn.fetchval(FUNCTIONS) is None
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.knowledge") == 2
        # release 1 still answers
        assert (
            len(
                await conn.fetch(
                    "SELECT * FROM amrita_memory.knowledge_search_v1('[1,0,0]'::vector, 5)"
                )
            )
            == 2
        )
    finally:
        await conn.close()

    await migrate.upgrade(empty_db_dsn)
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        assert await conn.fetchval(COLUMNS) == ["search_len", "search_tokens"]
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.knowledge") == 2
    finally:
        await conn.close()
