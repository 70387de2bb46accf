"""The migration generator (tests/support/sql_migration.py) on a database whose functions,
views and triggers differ from the live files': what it writes for the upgrade brings that
database to the fresh install's schema exactly, and what it writes for the downgrade brings
it back, comments included; the module it writes is a migration of the one chain."""

from __future__ import annotations

import shutil
from pathlib import Path

import asyncpg

from amrita_memory_pg.resources import migrations_dir
from amrita_memory_pg.storage.pg import migrate
from tests.support.pg import PgServer
from tests.support.schema_dump import dump_schema
from tests.support.sql_migration import catalogue, difference, write_migration

#: an older state: one body and comment changed, one comment alone, a trigger and a view
#: missing, a live function missing, one function the live files no longer define
OLDER = """
COMMENT ON FUNCTION amrita_memory.age_days_v1(timestamptz, timestamptz) IS 'older words';
CREATE OR REPLACE FUNCTION amrita_memory.similarity_v1(p_distance float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 1.0 / (2.0 + p_distance) $$;
COMMENT ON FUNCTION amrita_memory.similarity_v1(float8) IS 'an older one';
DROP TRIGGER pause_profile ON amrita_memory.profile;
DROP VIEW amrita_memory.partition_usage;
DROP FUNCTION amrita_memory.knowledge_list_v1();
CREATE FUNCTION amrita_memory.gone_v1(p_x integer) RETURNS integer
LANGUAGE sql IMMUTABLE AS 'SELECT p_x';
COMMENT ON FUNCTION amrita_memory.gone_v1(integer) IS 'retired since';
"""


async def test_the_written_sql_moves_a_database_to_the_present_and_back(
    pg_server: PgServer, template_db: str, db_dsn: str
) -> None:
    name = await pg_server.create_database(template=template_db)
    older = pg_server.dsn(name)
    try:
        conn = await asyncpg.connect(older)
        try:
            await conn.execute(OLDER)
        finally:
            await conn.close()
        before, present = dump_schema(older), dump_schema(db_dsn)
        assert before != present
        up, down, changed = difference(await catalogue(older), await catalogue(db_dsn))
        assert {c.split("(")[0] for c in changed} == {
            "trigger pause_profile ON profile",
            "view partition_usage",
            "function amrita_memory.similarity_v1",
            "function amrita_memory.knowledge_list_v1",
            "function amrita_memory.gone_v1",
            "function amrita_memory.age_days_v1",
        }
        # the comment alone changed: a COMMENT each way, not the function again
        assert [s for s in up if "age_days_v1" in s] == [
            "COMMENT ON FUNCTION amrita_memory.age_days_v1(timestamp with time zone,timestamp"
            " with time zone) IS " + repr(await _comment_of(db_dsn, "age_days_v1"))
        ]
        conn = await asyncpg.connect(older)
        try:
            await conn.execute(";\n".join(up))
            assert dump_schema(older) == present
            await conn.execute(";\n".join(down))
            assert dump_schema(older) == before
        finally:
            await conn.close()
    finally:
        await pg_server.drop_database(name)


def test_the_module_is_the_next_revision_and_runs_its_frozen_files(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    shutil.copytree(migrations_dir() / "versions", versions)
    module = write_migration(
        versions,
        "probe_change",
        title="A probe",
        why="Why it changes. " * 12,
        upgrade_sql=["SELECT 1;", "SELECT 2"],
        downgrade_sql=["SELECT 3"],
        forward="does this",
        backward="undoes it",
        tool="a test",
    )
    number = int(migrate.head_revision()[:4]) + 1
    assert module.name == f"{number:04d}_probe_change.py"
    text = module.read_text("utf-8")
    assert f'down_revision: str | None = "{migrate.head_revision()}"' in text
    assert max(len(line) for line in text.splitlines()) <= 100
    compile(text, module.name, "exec")
    assert module.with_suffix(".sql").read_text("utf-8").endswith("SELECT 1;\n\nSELECT 2;\n\n")
    assert "SELECT 3;" in module.with_suffix(".down.sql").read_text("utf-8")


async def _comment_of(dsn: str, name: str) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        return str(
            await conn.fetchval(
                "SELECT obj_description(p.oid, 'pg_proc') FROM pg_proc p WHERE p.proname = $1",
                name,
            )
        )
    finally:
        await conn.close()
