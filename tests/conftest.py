"""Shared fixtures: one real PostgreSQL (embedded unless AMRITA_MEMORY_TEST_DSN), a migrated
template, and a fresh database per test that needs one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from amrita_memory_pg.settings import Settings, load_settings
from tests.support.pg import TEMPLATE, PgServer


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServer]:
    dsn = os.environ.get("AMRITA_MEMORY_TEST_DSN")
    if dsn:
        yield PgServer(admin_dsn=dsn)
        return
    from amrita_memory_pg.storage.pg.embedded import start_embedded

    server = start_embedded(tmp_path_factory.mktemp("embedded"))
    try:
        yield PgServer(admin_dsn=server.dsn("postgres"))
    finally:
        server.stop()


@pytest.fixture(scope="session")
def template_db(pg_server: PgServer) -> str:
    """Name of a database migrated to head, cloned by every ``db_dsn``."""
    from amrita_memory_pg.storage.pg import migrate

    async def build() -> None:
        await pg_server.drop_database(TEMPLATE)
        await pg_server.create_database(name=TEMPLATE)
        await migrate.upgrade(pg_server.dsn(TEMPLATE))

    asyncio.run(build())
    return TEMPLATE


@pytest.fixture
async def db_dsn(pg_server: PgServer, template_db: str) -> AsyncIterator[str]:
    """DSN of a fresh database at schema head, dropped after the test."""
    name = await pg_server.create_database(template=template_db)
    try:
        yield pg_server.dsn(name)
    finally:
        await pg_server.drop_database(name)


@pytest.fixture
async def empty_db_dsn(pg_server: PgServer) -> AsyncIterator[str]:
    """DSN of a fresh empty database (no schema, no extension)."""
    name = await pg_server.create_database()
    try:
        yield pg_server.dsn(name)
    finally:
        await pg_server.drop_database(name)


@pytest.fixture
async def conn(db_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    from amrita_memory_pg.storage.pg.database import register_vector_codec

    connection = await asyncpg.connect(db_dsn)
    await register_vector_codec(connection)
    try:
        yield connection
    finally:
        await connection.close()


@pytest.fixture
def settings(db_dsn: str, tmp_path: Path) -> Settings:
    """Settings on the per-test database, the hashing embedder, a temporary data dir."""
    return load_settings(
        env={},
        read_default_files=False,
        overrides={
            "database.url": db_dsn,
            "data_dir": str(tmp_path / "data"),
            "embedding.protocol": "hash",
        },
    )
