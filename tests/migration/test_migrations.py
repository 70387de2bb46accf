"""Migrations: upgrade on an empty database, downgrade to base, upgrade again; every
revision down one step and up again leaves the schema it found; and the migrated schema
equals the declared SQLAlchemy metadata (autogenerate finds nothing).

The chain starts at the baseline (migrations/versions/0057_baseline.py, the schema of
0.14.x); tests/migration/test_present_schema.py compares it with a fresh install."""

from __future__ import annotations

from typing import Any

import asyncpg
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.schema import SCHEMA, metadata
from tests.support.pg import schema_tables
from tests.support.schema_dump import dump_schema

EXPECTED_TABLES = {
    "alembic_version",
    "memory",
    "memo",
    "store_meta",
    "sweep_state",
    "ann_index",
    "knowledge",
    "reembed_job",
    "reembed_staging",
    "chat_log",
    "activity_heatmap",
    "profile",
    "profile_history",
}


async def _routines(dsn: str) -> set[str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1",
            SCHEMA,
        )
        views = await conn.fetch("SELECT viewname FROM pg_views WHERE schemaname = $1", SCHEMA)
        return {r["proname"] for r in rows} | {r["viewname"] for r in views}
    finally:
        await conn.close()


async def test_upgrade_downgrade_upgrade(empty_db_dsn: str) -> None:
    await migrate.upgrade(empty_db_dsn)
    assert await schema_tables(empty_db_dsn) >= EXPECTED_TABLES
    assert {
        "decay_score_v1",
        "sweep_cutoff_v1",
        "sweep_batch_v8",
        "partition_usage",
        "memo_append_v1",
        "memo_write_v1",
        "chat_log_append_v1",
        "activity_touch_v1",
        "profile_save_v1",
    } <= await _routines(empty_db_dsn)

    await migrate.downgrade(empty_db_dsn, "base")
    assert await schema_tables(empty_db_dsn) == {"alembic_version"}
    assert await _routines(empty_db_dsn) == set()

    await migrate.upgrade(empty_db_dsn)
    assert await schema_tables(empty_db_dsn) >= EXPECTED_TABLES
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        assert await migrate.current_revision(conn) == migrate.head_revision()
        assert await conn.fetchval(f"SELECT count(*) FROM {SCHEMA}.store_meta") == 1
    finally:
        await conn.close()


async def test_every_revision_downgrades_to_exactly_the_schema_before_it(
    empty_db_dsn: str,
) -> None:
    """Up the chain one revision at a time from empty, then down one at a time: each
    downgrade leaves the schema (pg_dump of it) the upgrade found, the baseline's an empty
    schema."""
    revisions = [
        r.revision for r in ScriptDirectory.from_config(migrate.alembic_config()).walk_revisions()
    ]
    assert revisions[-1] == migrate.BASELINE
    before: list[str] = []
    for revision in reversed(revisions):
        before.append(dump_schema(empty_db_dsn))
        await migrate.upgrade(empty_db_dsn, revision)
    assert dump_schema(empty_db_dsn) != before[-1]
    for revision in revisions:
        await migrate.downgrade(empty_db_dsn, "-1")
        assert dump_schema(empty_db_dsn) == before.pop(), f"downgrade of {revision}"
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        assert await migrate.current_revision(conn) is None
    finally:
        await conn.close()
    assert await schema_tables(empty_db_dsn) == {"alembic_version"}


async def test_upgrade_is_idempotent(db_dsn: str) -> None:
    await migrate.upgrade(db_dsn)
    await migrate.upgrade(db_dsn)
    assert await schema_tables(db_dsn) >= EXPECTED_TABLES


def _include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    if type_ == "schema":
        return name == SCHEMA
    runtime = ("ix_memory_ann_", "ix_memory_kw_")  # per-partition, built by maintenance/ann.py
    return not (type_ == "index" and name is not None and name.startswith(runtime))


async def test_autogenerate_finds_no_difference(db_dsn: str) -> None:
    async def creator() -> asyncpg.Connection:
        return await asyncpg.connect(db_dsn)

    engine = create_async_engine("postgresql+asyncpg://", async_creator=creator, poolclass=NullPool)

    def diff(connection: Connection) -> list[Any]:
        context = MigrationContext.configure(
            connection,
            opts={
                "include_schemas": True,
                "include_name": _include_name,
                "compare_type": True,
                "compare_server_default": True,
                "version_table_schema": SCHEMA,
            },
        )
        return list(compare_metadata(context, metadata))

    try:
        async with engine.connect() as connection:
            differences = await connection.run_sync(diff)
    finally:
        await engine.dispose()
    assert differences == []


async def test_version_table_lives_in_our_schema(db_dsn: str) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        assert await conn.fetchval("SELECT to_regclass('public.alembic_version')") is None
        assert await conn.fetchval(f"SELECT to_regclass('{SCHEMA}.alembic_version')") is not None
    finally:
        await conn.close()


async def test_the_downgrade_below_memory_block_v3_drops_the_block_indexes(
    empty_db_dsn: str,
) -> None:
    """The block indexes are built at run time (maintenance) and read only by
    block_candidates_v1; below it nothing would read or drop them, and an index over
    importance makes every sweep demotion non-HOT."""
    await migrate.upgrade(empty_db_dsn, "0060_block_candidates")
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        await conn.execute(
            "CREATE INDEX ix_memory_top_0123 ON amrita_memory.memory "
            "(importance DESC, updated_at DESC, id) WHERE partition_key = 'global'"
        )
        await migrate.downgrade(empty_db_dsn, "0059_lineage")
        left = await conn.fetchval(
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'ix\\_memory\\_top\\_%'"
        )
        assert left == 0
        assert not await conn.fetchval(
            "SELECT to_regprocedure('amrita_memory.block_candidates_v1(text[], integer)')"
        )
    finally:
        await conn.close()


async def test_the_partition_count_migration_counts_the_rows_there_are(
    empty_db_dsn: str,
) -> None:
    """0061_partition_count backfills each partition's count from its rows; the triggers
    keep it from then on; its downgrade drops the table and the triggers, rows kept."""
    await migrate.upgrade(empty_db_dsn, "0060_block_candidates")
    add = (
        "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance,"
        " embedding, embed_fingerprint) SELECT $1, 'user', 'x' || g, 5, '[1,0,0]', 'f'"
        " FROM generate_series(1, $2) g"
    )
    counts = "SELECT partition_key, n FROM amrita_memory.partition_count ORDER BY 1"
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        await conn.execute(add, "QQPlatform_Private_1", 3)
        await conn.execute(add, "QQPlatform_Group_2", 2)
        await migrate.upgrade(empty_db_dsn, "0061_partition_count")
        assert [tuple(r) for r in await conn.fetch(counts)] == [
            ("QQPlatform_Group_2", 2),
            ("QQPlatform_Private_1", 3),
        ]
        await conn.execute(add, "QQPlatform_Group_2", 4)
        assert tuple((await conn.fetch(counts))[0]) == ("QQPlatform_Group_2", 6)
        assert await conn.fetch("SELECT * FROM amrita_memory.partition_count_check_v1()") == []
        await migrate.downgrade(empty_db_dsn, "0060_block_candidates")
        assert await conn.fetchval("SELECT to_regclass('amrita_memory.partition_count')") is None
        await conn.execute(add, "QQPlatform_Group_2", 1)
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 10
    finally:
        await conn.close()
