"""Alembic environment: async (asyncpg), our own schema, an advisory lock around upgrades.

The DSN comes from ``config.attributes["dsn"]`` (set by ``amrita-memory db …`` and the
tests), else ``-x dsn=…`` on the alembic command line, else ``DATABASE_URL``.

An empty database upgraded to ``head`` by ``storage/pg/migrate.py`` (``present_if_empty``)
gets the present schema in one step and is stamped head (``storage/pg/install.py``); to a
named revision, it runs the migrations from the baseline, as an installed database does. A database stamped with a revision this
code does not have (older than the baseline, or newer) is refused with a sentence.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import asyncpg
from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from amrita_memory_pg.domain.errors import SchemaNotReady
from amrita_memory_pg.storage.pg.install import install_present
from amrita_memory_pg.storage.pg.migrate import unsupported_revision
from amrita_memory_pg.storage.pg.schema import SCHEMA, metadata

config = context.config


def _dsn() -> str:
    dsn = config.attributes.get("dsn") or context.get_x_argument(as_dictionary=True).get("dsn")
    dsn = dsn or os.environ.get("DATABASE_URL")
    if not dsn:
        raise SystemExit(
            "no database: use `amrita-memory db upgrade`, or alembic -x dsn=postgresql://…"
        )
    return str(dsn)


#: Partial HNSW and keyword (GIN) indexes of large partitions are built at run time (their
#: predicate names a partition; the HNSW ones recorded in amrita_memory.ann_index), and are
#: not part of the declared schema.
RUNTIME_INDEX_PREFIX = ("ix_memory_ann_", "ix_memory_kw_")


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Only our schema: other plugins' tables in the same database are none of our business."""
    if type_ == "schema":
        return name == SCHEMA
    return not (type_ == "index" and name is not None and name.startswith(RUNTIME_INDEX_PREFIX))


def do_run_migrations(connection: Connection) -> None:
    # Serialise concurrent upgrades (bot + CLI); released when the transaction ends.
    connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('amrita_memory.migrate'))"))
    connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table_schema=SCHEMA,
        include_schemas=True,
        include_name=include_name,
        compare_type=True,
        transaction_per_migration=False,
    )
    with context.begin_transaction():
        migration = context.get_context()
        heads = migration.get_current_heads()
        for revision in heads:
            if problem := unsupported_revision(revision):
                raise SchemaNotReady(problem)
        if not heads and config.attributes.get("present_if_empty"):
            install_present(connection)
            migration.stamp(context.script, "head")
        else:
            context.run_migrations()


async def run_async_migrations() -> None:
    dsn = _dsn()

    async def creator() -> asyncpg.Connection:
        return await asyncpg.connect(dsn)

    engine = create_async_engine("postgresql+asyncpg://", async_creator=creator, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(do_run_migrations)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) mode is not supported; run against a database")

asyncio.run(run_async_migrations())
