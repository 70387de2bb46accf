"""F5: pg_dump, pg_restore and psql never get the database password on their command line.

The test server may trust local connections (the embedded one does), so a role with a
password is created and used through a DSN that carries the password; what matters is
what the child processes were given: argv without it, PGPASSWORD with it. One backup and
one dump restore run for real through those helpers, and a running ``amrita-memory psql``
is inspected through /proc like any local user could.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import psutil
import pytest

from amrita_memory_pg.maintenance.backup import create_backup
from amrita_memory_pg.maintenance.restore import restore_backup
from tests.support.cli import clean_env
from tests.support.memory import memory_on
from tests.support.pg import PgServer

SECRET = "S3cr3t-p@ss:word/%"  # URL-special characters on purpose


@pytest.fixture
async def password_dsn(pg_server: PgServer, db_dsn: str) -> AsyncIterator[str]:
    """``db_dsn`` as a superuser role that has a password (URL-encoded in the DSN)."""
    role = f"pw_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(pg_server.admin_dsn)
    try:
        await admin.execute(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{SECRET}'")
    finally:
        await admin.close()
    encoded = "S3cr3t-p%40ss%3Aword%2F%25"
    dsn = re.sub(r"^(postgres(?:ql)?://)[^@/]*@", rf"\g<1>{role}:{encoded}@", db_dsn)
    assert SECRET not in dsn and encoded in dsn
    try:
        yield dsn
    finally:
        owner = await asyncpg.connect(db_dsn)  # a dump restore made the role own the schema
        try:
            await owner.execute(f"REASSIGN OWNED BY {role} TO CURRENT_USER")
        finally:
            await owner.close()
        admin = await asyncpg.connect(pg_server.admin_dsn)
        try:
            await admin.execute(
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
            )
            await admin.execute(f"DROP ROLE IF EXISTS {role}")
        finally:
            await admin.close()


async def test_backup_and_dump_restore_pass_the_password_by_environment(
    password_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned: list[tuple[tuple[str, ...], dict[str, str]]] = []
    real_exec = asyncio.create_subprocess_exec

    async def recording_exec(*argv: str, **kwargs: Any) -> asyncio.subprocess.Process:
        spawned.append((tuple(argv), dict(kwargs.get("env") or {})))
        return await real_exec(*argv, **kwargs)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", recording_exec)
    async with memory_on(password_dsn, tmp_path) as mem:
        assert await mem.pool.fetchval("SELECT current_user") != "postgres"
        await mem.memories.add(
            partition_key="QQPlatform_Private_1", scope="user", content="喜欢猫", author="1"
        )
        info = await create_backup(mem.store)
        assert info.dump_path.stat().st_size > 0
        report = await restore_backup(mem.store, info.dump_path, force=True)
        assert report.counts.get("memory", 1) == 1
        assert await mem.pool.fetchval("SELECT content FROM amrita_memory.memory") == "喜欢猫"
    programs = [Path(argv[0]).name for argv, _ in spawned]
    assert {"pg_dump", "pg_restore", "psql"} <= set(programs), programs
    for argv, _env in spawned:
        assert not any("S3cr3t" in arg for arg in argv), argv
    with_dsn = [env for argv, env in spawned if any("://" in arg for arg in argv)]
    assert with_dsn and all(env.get("PGPASSWORD") == SECRET for env in with_dsn)


def test_cli_psql_has_no_password_on_its_command_line(password_dsn: str, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "amrita_memory_pg.cli.main",
            "psql",
            "-At",
            "-c",
            "SELECT current_user, pg_sleep(3)",
        ],
        env=clean_env({"DATABASE_URL": password_dsn, "AMRITA_MEMORY_DATA_DIR": str(tmp_path)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        psql: psutil.Process | None = None
        while psql is None and time.monotonic() < deadline and proc.poll() is None:
            children = psutil.Process(proc.pid).children()
            psql = next((c for c in children if c.name() == "psql"), None)
            time.sleep(0.05)
        assert psql is not None, "psql never ran"
        cmdline = Path(f"/proc/{psql.pid}/cmdline").read_bytes()  # what any local user sees
        environ = Path(f"/proc/{psql.pid}/environ").read_bytes().split(b"\0")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert b"S3cr3t" not in cmdline
    assert b"postgres" in cmdline  # the DSN is there, without its password
    assert f"PGPASSWORD={SECRET}".encode() in environ
    assert proc.returncode == 0, err
    assert out.strip().startswith("pw_")
