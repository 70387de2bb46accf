"""The embedded server: persists across restarts, is shared by processes, stops cleanly."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import psutil
import pytest

from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.storage.pg.database import Database
from amrita_memory_pg.storage.pg.embedded import start_embedded
from tests.support.cli import clean_env, run_cli

HOLDER = """
import sys
from pathlib import Path
from amrita_memory_pg.storage.pg.embedded import start_embedded
server = start_embedded(Path(sys.argv[1]))
print(server._server.get_pid(), flush=True)
sys.stdin.readline()
server.stop()
"""


def _postmaster_pid(pgdata: Path) -> int | None:
    pidfile = pgdata / "postmaster.pid"
    if not pidfile.exists():
        return None
    pid = int(pidfile.read_text().splitlines()[0])
    return pid if psutil.pid_exists(pid) else None


def _wait_stopped(pgdata: Path, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _postmaster_pid(pgdata) is None:
            return True
        time.sleep(0.1)
    return False


def _holder(data_dir: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip().isdigit(), line
    return proc, int(line)


@pytest.mark.slow
async def test_data_persists_across_restarts_and_the_server_stops(tmp_path: Path) -> None:
    settings = load_settings(
        env={},
        read_default_files=False,
        overrides={"data_dir": str(tmp_path), "embedding.protocol": "hash"},
    )
    database = await Database.open(settings)
    try:
        assert database.target.kind == "embedded"
        async with database.pool.acquire() as conn:
            await conn.execute(
                "INSERT INTO amrita_memory.memo (partition_key, content) VALUES ('QQPlatform_Private_1', '喜欢猫')"
            )
    finally:
        await database.close()
    pgdata = tmp_path / "pg"
    assert _wait_stopped(pgdata), "the embedded server kept running after the last handle closed"

    database = await Database.open(settings)
    try:
        async with database.pool.acquire() as conn:
            assert await conn.fetchval("SELECT content FROM amrita_memory.memo") == "喜欢猫"
    finally:
        await database.close()
    assert _wait_stopped(pgdata)


@pytest.mark.slow
def test_two_processes_share_one_server(tmp_path: Path) -> None:
    proc, holder_pid = _holder(tmp_path)
    try:
        ours = start_embedded(tmp_path)
        assert ours._server.get_pid() == holder_pid  # joined, not a second server
        ours.stop()
        assert _postmaster_pid(tmp_path / "pg") == holder_pid  # still serving the other process

        async def query() -> int:
            joined = start_embedded(tmp_path)
            try:
                conn = await asyncpg.connect(joined.dsn("postgres"))
                try:
                    return int(await conn.fetchval("SELECT 41 + 1"))
                finally:
                    await conn.close()
            finally:
                joined.stop()

        assert asyncio.run(query()) == 42
    finally:
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(30)
    assert _wait_stopped(tmp_path / "pg"), "the last process to leave did not stop the server"


@pytest.mark.slow
def test_a_killed_process_does_not_keep_the_server_forever(tmp_path: Path) -> None:
    proc, holder_pid = _holder(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert _postmaster_pid(tmp_path / "pg") == holder_pid  # orphaned server still up
    ours = start_embedded(tmp_path)
    assert ours._server.get_pid() == holder_pid
    ours.stop()
    assert _wait_stopped(tmp_path / "pg"), "a dead pid in the handle list kept the server running"


@pytest.mark.slow
def test_cli_runs_psql_on_the_embedded_database(tmp_path: Path) -> None:
    env = {"AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data")}
    assert run_cli("db", "upgrade", env=env).returncode == 0
    result = run_cli("psql", "-c", "SELECT * FROM amrita_memory.partition_usage", env=env)
    assert result.returncode == 0, result.stderr
    assert "partition_key" in result.stdout
    assert "memo_chars" in result.stdout
    status = run_cli("status", env=env)
    assert status.returncode == 0, status.stderr
    assert "server:      embedded PostgreSQL 18" in status.stdout
    assert "pgvector:    0.8" in status.stdout
    assert "(head)" in status.stdout
    assert _wait_stopped(tmp_path / "data" / "pg")
