"""No SQL function is installed that nothing calls (issue 22, item 3), and nothing the
previous release calls is gone (rolling upgrades). "Called" is read at test time from this
checkout's Python, so a new ``_vN`` the code calls passes without any list to update."""

from __future__ import annotations

import asyncpg
import pytest
from alembic.script import ScriptDirectory

from amrita_memory_pg.storage.pg import migrate
from tests.support.sql_usage import (
    assert_no_orphans,
    installed_sql,
    live_functions,
    orphan_functions,
    python_calls,
    read_previous_release,
    released_functions,
    retire_migration,
    retiring_migrations,
)

#: Every retiring migration, oldest first (0022_retire_sql, then one per release).
RETIRING = retiring_migrations()


def before_retiring(revision: str) -> str:
    """The revision a retiring migration follows (re-chained when migrations merge)."""
    script = ScriptDirectory.from_config(migrate.alembic_config())
    down = script.get_revision(revision).down_revision
    assert isinstance(down, str)
    return down


def dropped_later(revision: str) -> set[str]:
    """What the retiring migrations after ``revision`` drop. Still live when ``revision``
    ran: they became orphans only because the previous-release list moved on since."""
    later = RETIRING[RETIRING.index(revision) + 1 :]
    return {name for rev in later for name in retire_migration(rev).retired_names()}


async def live_at_head(dsn: str) -> set[str]:
    """The functions a migrated database at head keeps live (this checkout's Python, the
    previous release, triggers and views, and what they call)."""
    conn = await asyncpg.connect(dsn)
    try:
        installed = await installed_sql(conn)
    finally:
        await conn.close()
    return live_functions(installed, python_calls() | read_previous_release())


def test_every_retiring_migration_is_found() -> None:
    assert RETIRING[:2] == ("0022_retire_sql", "0036_retire_release4")
    for revision in RETIRING:
        assert retire_migration(revision).RETIRED


async def test_the_migrated_schema_has_no_orphan_function(conn: asyncpg.Connection) -> None:
    await assert_no_orphans(conn)


async def test_an_uncalled_function_fails_the_orphan_check(conn: asyncpg.Connection) -> None:
    await conn.execute(
        "CREATE FUNCTION amrita_memory.orphan_probe_v1(p_x integer) RETURNS integer "
        "LANGUAGE sql IMMUTABLE AS 'SELECT p_x'"
    )
    assert await orphan_functions(conn) == {"orphan_probe_v1": "orphan_probe_v1(p_x integer)"}
    with pytest.raises(AssertionError, match=r"orphan_probe_v1\(p_x integer\)"):
        await assert_no_orphans(conn)


async def test_a_function_is_live_through_a_live_caller_a_trigger_or_the_previous_release(
    conn: asyncpg.Connection,
) -> None:
    await conn.execute(
        """
        CREATE FUNCTION amrita_memory.probe_leaf_v1() RETURNS integer LANGUAGE sql AS 'SELECT 1';
        -- plpgsql: no pg_depend row, found in the body (the comment's probe_gone_v1 is not)
        CREATE FUNCTION amrita_memory.probe_caller_v1() RETURNS integer LANGUAGE plpgsql AS $$
        BEGIN
            -- was probe_gone_v1()
            RETURN amrita_memory.probe_leaf_v1();
        END $$;
        CREATE FUNCTION amrita_memory.probe_gone_v1() RETURNS integer LANGUAGE sql AS 'SELECT 2';
        CREATE FUNCTION amrita_memory.probe_atomic_v1() RETURNS integer LANGUAGE sql
        BEGIN ATOMIC SELECT amrita_memory.probe_gone_v1(); END;
        CREATE FUNCTION amrita_memory.probe_on_write_v1() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RETURN NEW; END $$;
        CREATE TABLE amrita_memory.probe_table (x integer);
        CREATE TRIGGER probe_trigger BEFORE INSERT ON amrita_memory.probe_table
            FOR EACH ROW EXECUTE FUNCTION amrita_memory.probe_on_write_v1();
        """
    )
    python = python_calls() | {"probe_caller_v1"}
    assert set(await orphan_functions(conn, called_by_python=python)) == {
        "probe_gone_v1",
        "probe_atomic_v1",
    }
    # probe_atomic_v1 reaches probe_gone_v1 by pg_depend (a BEGIN ATOMIC body)
    previous = read_previous_release() | {"probe_atomic_v1"}
    assert await orphan_functions(conn, called_by_python=python, previous_release=previous) == {}


async def test_every_function_the_previous_release_calls_is_still_installed(
    conn: asyncpg.Connection,
) -> None:
    previous = read_previous_release()
    assert previous, "sql/PREVIOUS_RELEASE.txt lists the previous release's calls"
    assert previous <= released_functions()
    installed = set((await installed_sql(conn)).functions)
    assert previous - installed == set()
    assert (python_calls() & released_functions()) - installed == set()


@pytest.mark.parametrize("revision", RETIRING)
async def test_before_each_retiring_migration_the_orphans_are_exactly_what_it_drops(
    empty_db_dsn: str, db_dsn: str, revision: str
) -> None:
    retiring = retire_migration(revision)
    # the previous release's calls, what later retirements drop, and what is live at head
    # (nothing dropped it since, so it was live then: e.g. trim_history_v1, called by the
    # previous release once and by trim_history_v2 now) — live at the time
    then_live = read_previous_release() | dropped_later(revision) | await live_at_head(db_dsn)
    await migrate.upgrade(empty_db_dsn, before_retiring(revision))
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        orphans = await orphan_functions(conn, previous_release=then_live)
        assert orphans
        assert set(orphans) == retiring.retired_names()
        # the migration names them by the signatures the database has
        signatures = await conn.fetch(
            """SELECT p.oid::regprocedure::text FROM pg_proc p
                 JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'amrita_memory' AND p.proname = ANY($1::text[])""",
            list(orphans),
        )
        assert {r[0].removeprefix("amrita_memory.") for r in signatures} == set(retiring.RETIRED)
    finally:
        await conn.close()

    await migrate.upgrade(empty_db_dsn, revision)
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        await assert_no_orphans(conn, previous_release=then_live)
    finally:
        await conn.close()


@pytest.mark.parametrize("revision", RETIRING)
async def test_downgrade_reinstalls_every_retired_function_as_released(
    empty_db_dsn: str, revision: str
) -> None:
    """The downgrade brings back each function and its comment exactly as its released
    file (and later comment files) installed it."""
    definitions = """
        SELECT p.proname, pg_get_functiondef(p.oid) AS body, obj_description(p.oid, 'pg_proc') AS comment
          FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'amrita_memory' ORDER BY 1"""
    await migrate.upgrade(empty_db_dsn, before_retiring(revision))
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        released = [tuple(r) for r in await conn.fetch(definitions)]
    finally:
        await conn.close()
    assert retire_migration(revision).retired_names() <= {r[0] for r in released}

    await migrate.upgrade(empty_db_dsn, revision)
    await migrate.downgrade(empty_db_dsn, before_retiring(revision))
    conn = await asyncpg.connect(empty_db_dsn)
    try:
        assert [tuple(r) for r in await conn.fetch(definitions)] == released
    finally:
        await conn.close()
