"""No SQL function is installed that nothing calls, nothing the previous release calls is
gone (rolling upgrades), and the live files mark exactly what only the previous release
keeps (what the next release step drops). "Called" is read at test time from this
checkout's Python, so a new ``_vN`` the code calls passes without any list to update."""

from __future__ import annotations

import asyncpg
import pytest

from tests.support.sql_usage import (
    assert_no_orphans,
    installed_sql,
    live_definitions,
    orphan_functions,
    previous_release_only,
    python_calls,
    python_sql_calls,
    read_previous_release,
)


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


async def test_every_function_the_previous_release_or_the_python_calls_is_installed(
    conn: asyncpg.Connection,
) -> None:
    previous = read_previous_release()
    assert previous, "sql/PREVIOUS_RELEASE.txt lists the previous release's calls"
    installed = set((await installed_sql(conn)).functions)
    assert previous - installed == set()
    # a bench or the bot calling a version the release step dropped fails here
    assert python_sql_calls() - installed == set()


async def test_the_live_files_mark_exactly_what_only_the_previous_release_keeps(
    conn: asyncpg.Connection,
) -> None:
    only_previous = previous_release_only(await installed_sql(conn))
    marked = {name for name, d in live_definitions().items() if d.marked}
    unmarked, stale = sorted(only_previous - marked), sorted(marked - only_previous)
    assert not unmarked, (
        f"{unmarked}: live only because the previous release calls them; put a line "
        "`-- previous release: <version> calls it during a rolling upgrade; the next release "
        "drops it.` right above each definition (the release step drops what is marked)"
    )
    assert not stale, (
        f"{stale}: marked `-- previous release`, but this release's package calls them "
        "(or nothing does): take the mark away (or delete them with a migration)"
    )
