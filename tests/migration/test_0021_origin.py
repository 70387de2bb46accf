"""Migration 0021_origin on memories written by the previous release: each existing row
gets the origin the migration's docstring promises (the recorded creator; an ok
extraction run's rows; a person's; a system's; every other automatic row 'unknown'),
nothing else changes, and a downgrade removes the column, the default and the trigger."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
from alembic.script import ScriptDirectory

from amrita_memory_pg.storage.pg import migrate

REVISION = "0021_origin"
T0 = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
INSERT = """
INSERT INTO amrita_memory.memory (id, partition_key, scope, content, tags, importance, source,
                                  author, created_at, updated_at, tier_since, embedding,
                                  embed_fingerprint)
VALUES ($1, 'QQPlatform_Private_1', 'user', $2, $3, 5, $4, $5, $6, $6, $6, '[1,0,0]'::vector,
        'fp')
"""
ORIGIN_COLUMN = """
SELECT count(*) FROM information_schema.columns
 WHERE table_schema = 'amrita_memory' AND table_name = 'memory' AND column_name = 'origin'
"""


def before() -> str:
    """The revision 0021 follows (re-chained when migrations are merged)."""
    script = ScriptDirectory.from_config(migrate.alembic_config())
    down = script.get_revision(REVISION).down_revision
    assert isinstance(down, str)
    return down


async def test_existing_rows_are_classified_by_the_documented_rules(empty_db_dsn: str) -> None:
    await migrate.upgrade(empty_db_dsn, before())
    conn = await asyncpg.connect(empty_db_dsn)
    later = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
    try:
        rows = [
            ("a" * 32, "人工添加", [], "user", "1", T0),
            ("b" * 32, "系统写的", [], "system", None, T0),
            ("c" * 32, "聊天模型写的（有历史）", ["t"], "auto", "1", later),
            ("d" * 32, "提取写的", [], "auto", None, T0),
            ("e" * 32, "来历不明的自动记忆", [], "auto", None, later),
            ("f" * 32, "同一时刻但有标签", ["x"], "auto", None, T0),
        ]
        for row in rows:
            async with conn.transaction():
                if row[0] == "c" * 32:  # written through the tools after 0019_trail
                    await conn.execute("SELECT set_config('amrita_memory.actor', 'llm:k', true)")
                await conn.execute(INSERT, *row)
        await conn.execute(
            "INSERT INTO amrita_memory.extraction_run (session_key, partition_key, trigger, status,"
            " entries, chat_until_id, started_at, finished_at)"
            " VALUES ('QQPlatform_Private_1', 'QQPlatform_Private_1', 'expiry', 'ok', 1, 1, $1, $1)",
            T0,
        )
        snapshot = "SELECT id, content, tags, importance, source, author, created_at FROM amrita_memory.memory ORDER BY id"
        kept = await conn.fetch(snapshot)
        assert await conn.fetchval(ORIGIN_COLUMN) == 0
    finally:
        await conn.close()

    await migrate.upgrade(empty_db_dsn, REVISION)
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        origins = dict(await conn.fetch("SELECT id, origin FROM amrita_memory.memory"))
        assert origins == {
            "a" * 32: "person",
            "b" * 32: "system",
            "c" * 32: "llm",
            "d" * 32: "extraction",
            "e" * 32: "unknown",
            "f" * 32: "unknown",
        }
        assert await conn.fetch(snapshot) == kept  # nothing else changed
        # new rows take the writer's kind from the transaction
        async with conn.transaction():
            await conn.execute("SELECT set_config('amrita_memory.actor', 'import:legacy', true)")
            await conn.execute(INSERT, "1" * 32, "导入的", [], "auto", None, T0)
        assert (
            await conn.fetchval("SELECT origin FROM amrita_memory.memory WHERE id = $1", "1" * 32)
            == "import"
        )
    finally:
        await conn.close()

    await migrate.downgrade(empty_db_dsn, before())
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        assert await conn.fetchval(ORIGIN_COLUMN) == 0
        assert (
            await conn.fetchval(
                "SELECT count(*) FROM pg_trigger WHERE tgname = 'memory_person_takes_over'"
            )
            == 0
        )
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 7
    finally:
        await conn.close()
