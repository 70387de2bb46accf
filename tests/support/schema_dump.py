"""The schema of one database as text, to compare two databases or freeze one.

``pg_dump --schema-only`` of the ``amrita_memory`` schema: every table, column (in its
order), default, constraint, index, storage setting, sequence, function (its whole
definition, body byte for byte), trigger, view and comment. Left out is what is not the
schema: alembic's version table, session settings, pg_dump's banner and the schema's own
CREATE (``migrations/env.py`` makes it). The single rows a schema starts with are data:
:func:`seed_rows` reads them.

Two uses: ``tests/migration/test_present_schema.py`` compares a fresh install with the
migrated chain, and ``python -m tests.support.schema_dump DSN`` prints a database's schema
as the baseline migration's SQL file holds it (``migrations/versions/0057_baseline.sql``
was written so, from a database the 57 revisions of 0.14.1 built).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import asyncpg

from amrita_memory_pg.maintenance.backup import pg_tool
from amrita_memory_pg.storage.pg.libpq import child_process_args

SCHEMA = "amrita_memory"

#: Lines of pg_dump's output that are not the schema.
_NOT_SCHEMA = re.compile(
    r"^(\\(un)?restrict .*"
    r"|SET .*"
    r"|SELECT pg_catalog\.set_config\('search_path'.*"
    r"|-- Dumped (from|by) .*"
    r"|CREATE SCHEMA amrita_memory;"
    r"|-- Name: amrita_memory; Type: SCHEMA; .*)$"
)


def dump_schema(dsn: str) -> str:
    """The ``amrita_memory`` schema of the database at ``dsn``, as SQL that recreates it."""
    argv = [
        pg_tool("pg_dump"),
        "--schema-only",
        "--no-owner",
        "--no-privileges",
        f"--schema={SCHEMA}",
        f"--exclude-table={SCHEMA}.alembic_version",
        dsn,
    ]
    args, env = child_process_args(argv)
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if "no matching schemas were found" in done.stderr:
        return ""  # no schema yet: nothing of ours
    if done.returncode != 0:
        raise RuntimeError(f"pg_dump failed: {done.stderr.strip()}")
    kept = [line for line in done.stdout.splitlines() if not _NOT_SCHEMA.match(line)]
    text = "\n".join(kept)
    # what the dropped lines leave behind: runs of blank lines and empty comment headers
    text = re.sub(r"(\n--\n--\n)+", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    # an empty schema (alembic's table only) dumps pg_dump's banner and nothing else
    return text.strip() + "\n" if re.search(r"^(CREATE|ALTER|COMMENT) ", text, re.M) else ""


async def seed_rows(conn: asyncpg.Connection) -> dict[str, list[dict[str, Any]]]:
    """The rows of every table of our schema but alembic's, as JSON objects without their
    timestamps (a fresh database's rows are its seed rows: the single-row tables')."""
    tables = await conn.fetch(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'alembic_version'"
        " ORDER BY 1",
        SCHEMA,
    )
    rows: dict[str, list[dict[str, Any]]] = {}
    for (table,) in tables:
        found = await conn.fetch(f'SELECT to_jsonb(t) AS row FROM {SCHEMA}."{table}" t')
        if found:
            rows[table] = sorted(
                (
                    {k: v for k, v in json.loads(r["row"]).items() if not _timestamp(v)}
                    for r in found
                ),
                key=json.dumps,
            )
    return rows


def _timestamp(value: Any) -> bool:
    return isinstance(value, str) and None is not re.fullmatch(
        r"\d{4}-\d\d-\d\dT[\d:.]+[+-]\d\d:\d\d", value
    )


if __name__ == "__main__":
    sys.stdout.write(dump_schema(sys.argv[1]))
