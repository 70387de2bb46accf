"""The `amrita-memory` command against a real server, and the wheel it ships in."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from amrita_memory_pg.storage.pg import migrate
from tests.support.cli import REPO, clean_env, run_cli
from tests.support.pg import PgServer


async def test_db_commands_up_down_current(pg_server: PgServer) -> None:
    name = await pg_server.create_database()
    dsn = pg_server.dsn(name)
    env = {"DATABASE_URL": dsn}
    try:
        current = run_cli("db", "current", env=env)
        assert current.returncode == 0, current.stderr
        assert current.stdout.startswith("(empty)")
        up = run_cli("db", "upgrade", env=env)
        assert up.returncode == 0, up.stderr
        assert f"-> {migrate.head_revision()}" in up.stdout
        again = run_cli("db", "upgrade", env=env)
        assert "already at" in again.stdout
        down = run_cli("db", "downgrade", "base", env=env, input="n\n")
        assert down.returncode == 1  # declined: nothing happens
        assert run_cli("db", "current", env=env).stdout.startswith(migrate.head_revision())
        down = run_cli("db", "downgrade", "base", "--yes", env=env)
        assert down.returncode == 0, down.stderr
        assert "(empty)" in down.stdout
    finally:
        await pg_server.drop_database(name)


async def test_status_reports_counts(db_dsn: str) -> None:
    result = run_cli("status", env={"DATABASE_URL": db_dsn})
    assert result.returncode == 0, result.stderr
    assert "server:      external PostgreSQL 18" in result.stdout
    assert "memories:    0 in 0 partitions" in result.stdout


def test_config_docs_is_the_committed_reference() -> None:
    result = run_cli("config", "docs")
    assert result.returncode == 0
    assert result.stdout == (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_config_show_prints_no_password_and_no_api_key(tmp_path: Path) -> None:
    """F6: a DSN's ``?password=`` and the API keys never reach the terminal."""
    toml = tmp_path / "config.toml"
    toml.write_text('[llm]\napi_key = "llm-file-key-31337"\n', encoding="utf-8")
    env = {
        "DATABASE_URL": "postgresql://amrita@db.example:5432/mem?password=hunter22secret",
        "EMBEDDING_MODEL_API_KEY": "emb-key-7f3a9c",
        "EMBEDDING_PROCTOL": "openai",
    }
    result = run_cli("--config", str(toml), "config", "show", env=env)
    assert result.returncode == 0, result.stderr
    for secret in ("hunter22secret", "emb-key-7f3a9c", "llm-file-key-31337"):
        assert secret not in result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert data["database"]["url"] == "postgresql://***@db.example:5432/mem?password=***"
    assert data["embedding"]["api_key"] == "***"
    assert data["llm"]["api_key"] == "***"
    assert data["embedding"]["protocol"] == "openai"  # the rest is the effective configuration


@pytest.mark.slow
async def test_wheel_ships_sql_and_migrations_and_works_from_anywhere(
    tmp_path: Path, pg_server: PgServer
) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        env=clean_env(),
    )
    wheel = next(dist.glob("amrita_memory_pg-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "amrita_memory_pg/sql/functions/decay.sql" in names
    assert "amrita_memory_pg/sql/tables.sql" in names
    assert "amrita_memory_pg/migrations/env.py" in names
    # the baseline migration and the frozen schema it runs
    assert "amrita_memory_pg/migrations/versions/0057_baseline.py" in names
    assert "amrita_memory_pg/migrations/versions/0057_baseline.sql" in names
    # the admin page's strings are data files of the package (a wheel must ship them)
    assert {"amrita_memory_pg/web/locales/zh.toml", "amrita_memory_pg/web/locales/en.toml"} <= names

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        env=clean_env(),
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    name = await pg_server.create_database()
    try:
        env = clean_env({"PYTHONPATH": str(target), "DATABASE_URL": pg_server.dsn(name)})
        where = subprocess.run(
            [
                sys.executable,
                "-c",
                "import amrita_memory_pg.resources as r; print(r.sql_dir()); print(r.migrations_dir())",
            ],
            env=env,
            cwd=elsewhere,
            capture_output=True,
            text=True,
            check=True,
        )
        assert all(line.startswith(str(target)) for line in where.stdout.split()), where.stdout
        strings = subprocess.run(
            [
                sys.executable,
                "-c",
                "from amrita_memory_pg.web import i18n; print(i18n.__file__); "
                "print(i18n.translator('en')('app.title'))",
            ],
            env=env,
            cwd=elsewhere,
            capture_output=True,
            text=True,
            check=True,
        )
        assert strings.stdout.split("\n")[:2] == [
            str(target / "amrita_memory_pg" / "web" / "i18n.py"),
            "Memory admin",
        ], strings.stdout
        result = subprocess.run(
            [str(target / "bin" / "amrita-memory"), "db", "upgrade"],
            env=env,
            cwd=elsewhere,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert migrate.head_revision() in result.stdout
    finally:
        await pg_server.drop_database(name)


async def test_sweep_command_reports_and_dry_run_keeps_rows(db_dsn: str) -> None:
    from datetime import UTC, datetime, timedelta

    import asyncpg

    from tests.support.data import bulk_insert

    conn = await asyncpg.connect(db_dsn)
    try:
        await bulk_insert(
            conn, count=30, created_at=datetime.now(UTC) - timedelta(days=40), importance=3
        )
        await bulk_insert(conn, count=20, created_at=datetime.now(UTC), importance=8)
    finally:
        await conn.close()
    env = {"DATABASE_URL": db_dsn, "EMBEDDING_PROCTOL": "hash"}
    dry = run_cli("sweep", "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert "dry run: scanned 50, would demote 0, would purge 30, would keep 20" in dry.stdout
    assert "medium 25.1 d" in dry.stdout
    real = run_cli("sweep", env=env)
    assert "scanned 50, demoted 0, purged 30, kept 20" in real.stdout, real.stdout + real.stderr
    disabled = run_cli("sweep", env={**env, "AMRITA_MEMORY_DECAY__SWEEP_ENABLED": "false"})
    assert "sweep disabled via config" in disabled.stdout


async def test_status_says_when_its_partition_list_is_cut(db_dsn: str, tmp_path: Path) -> None:
    """12 partitions, the 10 largest listed, and the line says so."""
    from tests.support.memory import memory_on

    async with memory_on(db_dsn, tmp_path) as mem:
        for p in range(12):
            for i in range(p + 1):
                await mem.memories.add(
                    partition_key=f"QQPlatform_Private_{100 + p}", scope="user", content=f"记忆{i}"
                )
    env = {
        "DATABASE_URL": db_dsn,
        "EMBEDDING_PROCTOL": "hash",
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path),
    }
    result = run_cli("status", env=env)
    assert result.returncode == 0, result.stderr
    assert "largest partitions (10 of 12;" in result.stdout
    assert "QQPlatform_Private_111: 12" in result.stdout
    assert "QQPlatform_Private_100:" not in result.stdout


async def test_an_old_style_key_is_resolved_and_said(db_dsn: str, tmp_path: Path) -> None:
    """`memory list/search user_10004` used to find nothing silently."""
    from tests.support.memory import memory_on

    async with memory_on(db_dsn, tmp_path, embedding__protocol="hash") as mem:
        await mem.memories.add(
            partition_key="QQPlatform_Private_10004", scope="user", content="喜欢下围棋"
        )
    env = {
        "DATABASE_URL": db_dsn,
        "EMBEDDING_PROCTOL": "hash",
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path),
    }
    listed = run_cli("memory", "list", "user_10004", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "喜欢下围棋" in listed.stdout
    assert "user_10004 is an old-style partition key, now QQPlatform_Private_10004" in listed.stderr
    found = run_cli("memory", "search", "user_10004", "围棋", "--mode", "keyword", env=env)
    assert found.returncode == 0, found.stderr
    assert "喜欢下围棋" in found.stdout
    current = run_cli("memory", "list", "QQPlatform_Private_10004", env=env)
    assert "旧格式" not in current.stderr
