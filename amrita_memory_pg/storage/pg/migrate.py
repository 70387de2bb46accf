"""Schema migrations through alembic, driven from code (the CLI, start-up, tests).

Alembic's version table lives in our own schema (``amrita_memory.alembic_version``), so
sharing a database with other NoneBot plugins that also use alembic is safe. Migrations
take a transaction-level advisory lock, so a bot and a CLI starting together do not race.

An empty database upgraded to head gets the present schema in one step (``install.py``);
an installed one runs the migrations from its revision on, which start at the baseline
(:data:`BASELINE`): a database older than that is refused with the release to upgrade
it with first (:func:`unsupported_revision`).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

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


#: The oldest revision this code upgrades from: the schema of 0.14.0 and 0.14.1. Every
#: revision before it was squashed into it (``migrations/versions/0057_baseline.py``).
BASELINE = "0057_retire_release12"
#: The release whose migrations bring an older database to :data:`BASELINE`.
BASELINE_RELEASE = "0.14.1"


def _number(revision: str) -> int | None:
    """The sequence number a revision id starts with (``0057_x`` -> 57), if any."""
    digits = re.match(r"[0-9]{4}", revision)
    return int(digits.group()) if digits else None


def unsupported_revision(revision: str | None) -> str | None:
    """Why this code cannot migrate a database stamped ``revision`` (None: it can): one
    older than the baseline (its migrations were squashed away), or one this code does
    not know (a newer version migrated it)."""
    if revision is None:
        return None
    known = {r.revision for r in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
    if revision in known:
        return None
    number, oldest = _number(revision), _number(BASELINE)
    if number is not None and oldest is not None and number < oldest:
        return (
            f"the database schema is at revision {revision}, older than this version of "
            f"amrita-memory-pg upgrades from ({BASELINE}, the schema of {BASELINE_RELEASE}): "
            f"upgrade it with amrita-memory-pg {BASELINE_RELEASE} first (`amrita-memory db "
            "upgrade` with that version installed), then with this one"
        )
    return (
        f"the database schema is at revision {revision}, which this version of "
        "amrita-memory-pg does not know: a newer version migrated it. Run that version or a "
        "newer one, or restore a backup taken before that upgrade"
    )


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
    """Upgrade the database to ``revision`` (alembic runs in a worker thread). An empty
    database upgraded to head gets the present schema in one step (``install.py``)."""
    cfg = alembic_config(dsn)
    cfg.attributes["present_if_empty"] = revision in ("head", "heads")
    await asyncio.to_thread(command.upgrade, cfg, revision)


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
    """The migrations' folder: each revision's module and the SQL frozen beside it."""
    return migrations_dir() / "versions"


def driver(connection: Connection) -> Any:
    """The asyncpg connection under a SQLAlchemy one that a migration or install runs on."""
    driver_conn = connection.connection.driver_connection
    assert driver_conn is not None, "migrations run on a live asyncpg connection"
    return driver_conn


def execute_script(connection: Connection, text: str) -> None:
    """Execute SQL text on ``connection``, in its transaction: several statements allowed
    (function bodies included), so it goes to asyncpg's simple-query protocol."""
    await_only(driver(connection).execute(text))


def run_sql(text: str) -> None:
    """Execute SQL text (several statements allowed) inside a running migration."""
    from alembic import op

    execute_script(op.get_bind(), text)


def run_sql_file(path: Path) -> None:
    """Execute a migration's own SQL file (beside it under ``migrations/versions``)."""
    run_sql(path.read_text(encoding="utf-8"))
