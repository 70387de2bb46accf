"""Schema migrations through alembic, driven from code (the CLI, start-up, tests).

Alembic's version table lives in our own schema (``amrita_memory.alembic_version``), so
sharing a database with other NoneBot plugins that also use alembic is safe. Migrations
take a transaction-level advisory lock, so a bot and a CLI starting together do not race.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from amrita_memory_pg.resources import migrations_dir
from amrita_memory_pg.storage.queries import query


def alembic_config(dsn: str | None = None) -> Config:
    """An alembic Config pointing at our migrations, with the DSN passed by attribute."""
    cfg = Config()
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("version_locations", str(migrations_dir() / "versions"))
    if dsn is not None:
        cfg.attributes["dsn"] = dsn
    return cfg


def head_revision() -> str:
    """The newest revision shipped with this code."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


_RELATIVE = re.compile(r"^(?:head|base)?[+-][0-9]{1,4}$")


def revision_problem(revision: str) -> str | None:
    """Why alembic cannot go to ``revision`` (None: it can): ``head``, ``base``, a
    relative step (``-1``, ``head-2``) or a revision id shipped with this code.
    Checked before alembic runs, whose own errors for a bad one are an assertion or a
    resolution traceback."""
    if revision in ("head", "heads", "base") or _RELATIVE.match(revision):
        return None
    known = [r.revision for r in ScriptDirectory.from_config(alembic_config()).walk_revisions()]
    if revision in known:
        return None
    shown = revision if len(revision) <= 40 and revision.isprintable() else repr(revision[:40])
    return (
        f"no such schema revision: {shown} (use head, base, a step such as -1, "
        f"or one of {known[-1]} … {known[0]})"
    )


async def upgrade(dsn: str, revision: str = "head") -> None:
    """Upgrade the database to ``revision`` (alembic runs in a worker thread)."""
    await asyncio.to_thread(command.upgrade, alembic_config(dsn), revision)


async def downgrade(dsn: str, revision: str) -> None:
    """Downgrade the database to ``revision`` (``base`` removes every table of ours)."""
    await asyncio.to_thread(command.downgrade, alembic_config(dsn), revision)


async def current_revision(conn: Any) -> str | None:
    """The revision stamped in the database, or None before the first upgrade
    (``conn`` is a connection, a pooled one, or a pool)."""
    if not await conn.fetchval(query("revision_table_exists")):
        return None
    value = await conn.fetchval(query("schema_revision"))
    return None if value is None else str(value)


def versions_dir() -> Path:
    return migrations_dir() / "versions"


def run_sql_file(relative: str) -> None:
    """Execute one file from ``sql/`` inside a running migration.

    The file may hold several statements (function bodies included), so it goes to
    asyncpg's simple-query protocol on the migration's own connection and transaction.
    """
    from amrita_memory_pg.resources import read_sql

    run_sql(read_sql(relative))


def run_sql(text: str) -> None:
    """Execute SQL text (several statements allowed) inside a running migration, the way
    :func:`run_sql_file` runs a file."""
    from alembic import op
    from sqlalchemy.util import await_only

    driver_conn = op.get_bind().connection.driver_connection
    assert driver_conn is not None, "migrations run on a live asyncpg connection"
    await_only(driver_conn.execute(text))
