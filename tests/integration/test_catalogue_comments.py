"""Every function and view of the schema explains itself in psql (\\df+, \\dv+)."""

from __future__ import annotations

import asyncpg

from amrita_memory_pg.storage.pg.schema import SCHEMA

UNCOMMENTED = """
SELECT p.oid::regprocedure::text AS object
  FROM pg_proc p
 WHERE p.pronamespace = $1::regnamespace
   AND coalesce(obj_description(p.oid, 'pg_proc'), '') = ''
UNION ALL
SELECT c.oid::regclass::text
  FROM pg_class c
 WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('v', 'm')
   AND coalesce(obj_description(c.oid, 'pg_class'), '') = ''
 ORDER BY 1
"""


async def test_no_function_or_view_of_the_schema_lacks_a_comment(
    conn: asyncpg.Connection,
) -> None:
    counted = await conn.fetchval(
        "SELECT (SELECT count(*) FROM pg_proc WHERE pronamespace = $1::regnamespace)"
        " + (SELECT count(*) FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind = 'v')",
        SCHEMA,
    )
    assert counted >= 30  # the query looks where the objects are
    assert [r["object"] for r in await conn.fetch(UNCOMMENTED, SCHEMA)] == []
