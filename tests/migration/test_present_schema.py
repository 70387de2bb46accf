"""A fresh install and the migrated chain give the same schema, function bodies included.

An empty database gets the present: the live files of ``sql/``, the table declarations
(``storage/pg/install.py``). An installed one gets the chain: the baseline every supported
database is at, then each migration after it. ``pg_dump --schema-only`` of the two must be
the same text (tests/support/schema_dump.py: every table, column in its order, default,
constraint, index, storage setting, function with its whole body, trigger, view and
comment), with the same rows. So a live file edited without a migration, or a migration
without its live file, fails here, naming what differs; this is what keeps a definition
from changing under an installed database.
"""

from __future__ import annotations

import difflib

import asyncpg
import pytest

from amrita_memory_pg.domain.errors import SchemaNotReady
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.storage.pg import install, migrate
from amrita_memory_pg.storage.pg.database import Database
from tests.support.cli import run_cli
from tests.support.pg import PgServer, schema_tables
from tests.support.schema_dump import dump_schema, seed_rows

FIX = (
    "the fresh install (sql/functions, sql/tables.sql, storage/pg/schema.py) and the "
    "migrations disagree: a change to a live definition comes with a migration that makes "
    "the same change (docs/development.md, 'Changing a SQL function')"
)


@pytest.fixture
async def chain_dsn(empty_db_dsn: str) -> str:
    """A database built by the chain: the baseline, then every migration after it."""
    await migrate.upgrade(empty_db_dsn, migrate.BASELINE)
    await migrate.upgrade(empty_db_dsn)
    return empty_db_dsn


def schema_diff(chain: str, present: str) -> str:
    lines = difflib.unified_diff(
        chain.splitlines(), present.splitlines(), "chain", "fresh install", lineterm="", n=2
    )
    return "\n".join(list(lines)[:150])


async def _state(dsn: str) -> tuple[object, ...]:
    conn = await asyncpg.connect(dsn)
    try:
        return (
            await seed_rows(conn),
            await migrate.current_revision(conn),
            await conn.fetchval("SELECT count(*) FROM pg_extension WHERE extname = 'vector'"),
        )
    finally:
        await conn.close()


async def test_a_fresh_install_and_the_migrated_chain_have_the_same_schema(
    db_dsn: str, chain_dsn: str
) -> None:
    chain, present = dump_schema(chain_dsn), dump_schema(db_dsn)
    assert "CREATE FUNCTION amrita_memory.search_memories_v8(" in present
    assert present == chain, f"{FIX}:\n{schema_diff(chain, present)}"
    assert await _state(db_dsn) == await _state(chain_dsn)
    assert (await _state(db_dsn))[1:] == (migrate.head_revision(), 1)


async def test_the_comparison_sees_one_changed_line_of_a_function_body(
    db_dsn: str, chain_dsn: str
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        definition = await conn.fetchval(
            "SELECT pg_get_functiondef('amrita_memory.similarity_v1(float8)'::regprocedure)"
        )
        await conn.execute(definition.replace("1.0 / (1.0 + ", "1.0 / (1.0 +  "))
    finally:
        await conn.close()
    diff = schema_diff(dump_schema(chain_dsn), dump_schema(db_dsn))
    assert "+    SELECT 1.0 / (1.0 +  " in diff, diff


async def test_an_empty_database_gets_the_present_and_a_named_revision_the_chain(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = install.install_present

    def counted(connection: object) -> None:
        calls.append("present")
        real(connection)  # type: ignore[arg-type]

    monkeypatch.setattr(install, "install_present", counted)
    for target, expected in (("head", ["present"]), (migrate.BASELINE, [])):
        name = await pg_server.create_database()
        try:
            calls.clear()
            await migrate.upgrade(pg_server.dsn(name), target)
            assert calls == expected, target
            conn = await asyncpg.connect(pg_server.dsn(name))
            try:
                assert await migrate.current_revision(conn) == (
                    migrate.head_revision() if target == "head" else migrate.BASELINE
                )
            finally:
                await conn.close()
        finally:
            await pg_server.drop_database(name)


async def _stamped(empty_db_dsn: str, revision: str) -> None:
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        await conn.execute(
            "CREATE SCHEMA amrita_memory;"
            " CREATE TABLE amrita_memory.alembic_version (version_num varchar(32) PRIMARY KEY);"
            f" INSERT INTO amrita_memory.alembic_version VALUES ('{revision}')"
        )
    finally:
        await conn.close()


async def test_a_database_older_than_the_baseline_is_told_which_release_upgrades_it(
    empty_db_dsn: str,
) -> None:
    await _stamped(empty_db_dsn, "0040_retire_release5")
    with pytest.raises(SchemaNotReady) as refused:
        await migrate.upgrade(empty_db_dsn)
    message = str(refused.value)
    assert "0040_retire_release5" in message and migrate.BASELINE in message
    assert f"upgrade it with amrita-memory-pg {migrate.BASELINE_RELEASE} first" in message
    assert await schema_tables(empty_db_dsn) == {"alembic_version"}  # nothing touched

    # a bot's start, migrating or not, says the same
    settings = load_settings(
        env={}, read_default_files=False, overrides={"database.url": empty_db_dsn}
    )
    for upgrade in (True, False):
        with pytest.raises(SchemaNotReady, match=f"{migrate.BASELINE_RELEASE} first"):
            await Database.open(settings, upgrade=upgrade)

    cli = run_cli("db", "upgrade", env={"DATABASE_URL": empty_db_dsn})
    assert cli.returncode == 2, cli.stderr
    assert f"amrita-memory-pg {migrate.BASELINE_RELEASE} first" in cli.stderr
    assert "Traceback" not in cli.stderr
    current = run_cli("db", "current", env={"DATABASE_URL": empty_db_dsn})
    assert current.returncode == 0, current.stderr
    assert current.stdout.startswith("0040_retire_release5 (the database schema is at")
    assert f"{migrate.BASELINE_RELEASE} first" in current.stdout


async def test_a_database_a_newer_version_migrated_is_refused_too(empty_db_dsn: str) -> None:
    await _stamped(empty_db_dsn, "0999_from_the_future")
    with pytest.raises(SchemaNotReady, match="a newer version migrated it"):
        await migrate.upgrade(empty_db_dsn)
    assert migrate.unsupported_revision(migrate.BASELINE) is None
    assert migrate.unsupported_revision(None) is None
