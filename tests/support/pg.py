"""Test databases on one PostgreSQL server per test session.

``AMRITA_MEMORY_TEST_DSN`` (an admin DSN of any server with pgvector) is used when set;
otherwise one embedded server starts in a temporary directory. A template database is
migrated to head once; each test gets ``CREATE DATABASE … TEMPLATE`` (milliseconds).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg

T = TypeVar("T")

TEMPLATE = "amt_template"


def with_database(dsn: str, database: str) -> str:
    """The same server, another database."""
    if "?" in dsn:
        base, _, query = dsn.partition("?")
    else:
        base, query = dsn, ""
    base = re.sub(r"(postgres(?:ql)?://[^/]*)(/[^?]*)?$", rf"\1/{database}", base)
    return base + (f"?{query}" if query else "")


@dataclass
class PgServer:
    admin_dsn: str

    def dsn(self, database: str) -> str:
        return with_database(self.admin_dsn, database)

    async def create_database(self, template: str | None = None, name: str | None = None) -> str:
        name = name or f"t_{uuid.uuid4().hex[:16]}"
        conn = await asyncpg.connect(self.admin_dsn)
        try:
            suffix = f' TEMPLATE "{template}"' if template else ""
            await conn.execute(f'CREATE DATABASE "{name}"{suffix}')
        finally:
            await conn.close()
        return name

    async def drop_database(self, name: str) -> None:
        conn = await asyncpg.connect(self.admin_dsn)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


async def schema_tables(dsn: str, schema: str = "amrita_memory") -> set[str]:
    """The tables of ``schema`` in the database at ``dsn``."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)
        return {r["tablename"] for r in rows}
    finally:
        await conn.close()


class SyncConnection:
    """A private event loop plus one connection, for sync tests (hypothesis)."""

    def __init__(self, dsn: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._conn: asyncpg.Connection = self.run(asyncpg.connect(dsn))

    def run(self, awaitable: Awaitable[T]) -> T:
        return self._loop.run_until_complete(awaitable)

    def fetchval(self, query: str, *args: Any) -> Any:
        return self.run(self._conn.fetchval(query, *args))

    def fetchrow(self, query: str, *args: Any) -> Any:
        return self.run(self._conn.fetchrow(query, *args))

    def close(self) -> None:
        self.run(self._conn.close())
        self._loop.close()
