"""Connecting: one clear sentence for an unreachable server or a missing/old pgvector."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from amrita_memory_pg.domain.errors import DatabaseUnavailable, PgvectorMissing
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.storage.pg.database import Database, check_pgvector, connect_once, redact
from tests.support.cli import run_cli
from tests.support.pg import PgServer


@pytest.fixture
async def no_pgvector_dsn(pg_server: PgServer, tmp_path: Path) -> AsyncIterator[str]:
    """A database on the real server where pgvector is not installable (PG 18 extension_control_path)."""
    empty = tmp_path / "noext"
    empty.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(empty, 0o755)
    name = await pg_server.create_database()
    conn = await connect_once(pg_server.admin_dsn, 10)
    try:
        await conn.execute(f"ALTER DATABASE \"{name}\" SET extension_control_path = '{empty}'")
    finally:
        await conn.close()
    try:
        yield pg_server.dsn(name)
    finally:
        await pg_server.drop_database(name)


@pytest.fixture
async def old_pgvector_dsn(pg_server: PgServer, tmp_path: Path) -> AsyncIterator[str]:
    """A database whose only pgvector is a (stand-in) 0.6.0 control file."""
    ext = tmp_path / "oldext" / "extension"
    ext.mkdir(parents=True)
    (ext / "vector.control").write_text(
        "comment='old'\ndefault_version='0.6.0'\nrelocatable=true\n"
    )
    (ext / "vector--0.6.0.sql").write_text("SELECT 1;\n")
    for path in (tmp_path, ext.parent, ext, *ext.iterdir()):
        os.chmod(path, 0o755)
    name = await pg_server.create_database()
    conn = await connect_once(pg_server.admin_dsn, 10)
    try:
        await conn.execute(f"ALTER DATABASE \"{name}\" SET extension_control_path = '{ext.parent}'")
    finally:
        await conn.close()
    try:
        yield pg_server.dsn(name)
    finally:
        await pg_server.drop_database(name)


def _one_clear_sentence(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith("amrita-memory: ")
    return lines[0]


async def test_unreachable_server_is_one_sentence() -> None:
    with pytest.raises(DatabaseUnavailable) as err:
        await connect_once("postgresql://postgres@127.0.0.1:1/nothing", 2)
    assert "127.0.0.1:1/nothing" in str(err.value)
    assert "DATABASE_URL" in str(err.value)

    result = run_cli("status", env={"DATABASE_URL": "postgresql://postgres@127.0.0.1:1/nothing"})
    assert result.returncode == 2
    line = _one_clear_sentence(result.stderr)
    assert "cannot connect to PostgreSQL at 127.0.0.1:1/nothing" in line


async def test_server_without_pgvector_says_what_to_install(no_pgvector_dsn: str) -> None:
    conn = await connect_once(no_pgvector_dsn, 10)
    try:
        with pytest.raises(PgvectorMissing, match=r"no pgvector extension: install pgvector 0\.7"):
            await check_pgvector(conn)
    finally:
        await conn.close()
    result = run_cli("db", "upgrade", env={"DATABASE_URL": no_pgvector_dsn})
    assert result.returncode == 2
    assert "install pgvector 0.7 or newer" in _one_clear_sentence(result.stderr)


async def test_too_old_pgvector_is_refused_before_and_after_install(old_pgvector_dsn: str) -> None:
    conn = await connect_once(old_pgvector_dsn, 10)
    try:
        with pytest.raises(PgvectorMissing, match=r"offers only pgvector 0\.6\.0"):
            await check_pgvector(conn)
        await conn.execute("CREATE EXTENSION vector")
        with pytest.raises(
            PgvectorMissing, match=r"pgvector 0\.6\.0 is installed .* ALTER EXTENSION vector UPDATE"
        ):
            await check_pgvector(conn)
    finally:
        await conn.close()
    result = run_cli("db", "upgrade", env={"DATABASE_URL": old_pgvector_dsn})
    assert result.returncode == 2
    assert "0.7 or newer is required" in _one_clear_sentence(result.stderr)


async def test_wrong_config_key_is_one_sentence(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[decay]\nhalf_life = 10\n", encoding="utf-8")
    result = run_cli("--config", str(config), "status")
    assert result.returncode == 2
    line = _one_clear_sentence(result.stderr)
    assert "unknown config key `decay.half_life`" in line
    assert "half_life_days" in line

    result = run_cli("status", env={"EMBED_MISMATCH_POLICY": "sometimes"})
    assert result.returncode == 2
    line = _one_clear_sentence(result.stderr)
    assert "`embedding.mismatch_policy` = 'sometimes'" in line
    assert "'ask', 'auto' or 'never'" in line


async def test_database_open_migrates_and_pools(db_dsn: str, tmp_path: Path) -> None:
    settings = load_settings(
        env={},
        read_default_files=False,
        overrides={"database.url": db_dsn, "data_dir": str(tmp_path)},
    )
    database = await Database.open(settings)
    try:
        async with database.pool.acquire() as conn:
            assert await conn.fetchval("SELECT '[1,2,3]'::vector") is not None
            vec = await conn.fetchval("SELECT '[1,2,3]'::vector")
            assert list(vec) == [1.0, 2.0, 3.0]
        assert database.target.kind == "external"
    finally:
        await database.close()


def test_redact_hides_the_password() -> None:
    assert redact("postgresql://me:secret@db:5432/x") == "postgresql://me:***@db:5432/x"
