"""The embedded server: persists across restarts, is shared by processes, stops cleanly."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import psutil
import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.storage.pg.database import Database
from amrita_memory_pg.storage.pg.embedded import CHECK_INTERVAL, pid_alive, start_embedded
from amrita_memory_pg.tools.context import ToolContext
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


# ---------------------------------------------------------------- supervision (F8)


def _postmasters(pgdata: Path) -> list[int]:
    """Every live postmaster process of ``pgdata`` (its children do not carry -D)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if (
            proc.info["status"] != psutil.STATUS_ZOMBIE
            and "-D" in cmdline
            and str(pgdata) in cmdline
            and Path(cmdline[0]).name == "postgres"
        ):
            found.append(proc.pid)
    return found


async def _write_until_success(mem: Any, ctx: Any, content: str, seconds: float) -> float:
    """Seconds until a write_memory call succeeds again (fails the test after ``seconds``)."""
    started = time.monotonic()
    last: dict[str, Any] = {}
    while time.monotonic() - started < seconds:
        reply = await asyncio.wait_for(
            mem.call_tool(
                "write_memory",
                {"content": content, "tags": "t", "importance": "medium", "scope": "user"},
                ctx,
            ),
            seconds,
        )
        last = json.loads(reply)
        if last["status"] == "success":
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    raise AssertionError(f"no successful write within {seconds} s; last reply: {last}")


@pytest.mark.slow
async def test_a_killed_postmaster_is_restarted_and_the_pool_recovers(tmp_path: Path) -> None:
    settings = load_settings(
        env={},
        read_default_files=False,
        overrides={"data_dir": str(tmp_path), "embedding.protocol": "hash"},
    )
    ctx = ToolContext(platform="qq", user_id="10001", group_id=None, roles=frozenset())
    pgdata = tmp_path / "pg"
    async with open_memory(settings, startup=False) as mem:
        server = mem.database.target.embedded
        assert server is not None
        before = json.loads(
            await mem.call_tool(
                "write_memory",
                {"content": "我喜欢猫", "tags": "pet", "importance": "high", "scope": "user"},
                ctx,
            )
        )
        assert before["status"] == "success", before
        old_pid = server.postmaster_pid()
        assert old_pid is not None
        os.kill(old_pid, signal.SIGKILL)
        killed = time.monotonic()
        for _ in range(500):  # until it is dead its backends may still answer
            if not pid_alive(old_pid):
                break
            await asyncio.sleep(0.01)

        await _write_until_success(mem, ctx, "喜欢狗", seconds=10)
        recovery = time.monotonic() - killed
        assert recovery <= 10
        for _ in range(50):  # its supervisor may still be confirming the start
            if server.restarts:
                break
            await asyncio.sleep(0.1)
        new_pid = server.postmaster_pid()
        assert new_pid is not None and new_pid != old_pid
        assert server.restarts == 1  # this process restarted it, once
        assert _postmasters(pgdata) == [new_pid]
        listed = json.loads(await mem.call_tool("list_memory", {"scope": "user"}, ctx))
        contents = {entry["content_preview"] for entry in listed["memories"]}
        assert {"我喜欢猫", "喜欢狗"} <= contents, listed  # the earlier memory survived
        print(f"recovered {recovery:.2f} s after kill -9")
    assert _wait_stopped(pgdata), "the restarted server kept running after the last user left"


HOLDER_ON_STORE = """
import sys
from pathlib import Path
from amrita_memory_pg.storage.pg.embedded import start_embedded
server = start_embedded(Path(sys.argv[1]))
print(server.postmaster_pid(), flush=True)
sys.stdin.readline()
print(server.restarts, flush=True)
server.stop()
"""


@pytest.mark.slow
def test_two_processes_restart_one_postmaster_and_the_last_one_stops_it(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER_ON_STORE, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    pgdata = tmp_path / "pg"
    try:
        first = int(proc.stdout.readline())
        ours = start_embedded(tmp_path)
        assert ours.postmaster_pid() == first
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pid = ours.postmaster_pid()
            if pid not in (None, first):
                break
            time.sleep(0.1)
        time.sleep(2 * CHECK_INTERVAL + 0.5)  # both supervisors have looked again
        running = _postmasters(pgdata)
        assert len(running) == 1, running  # never two postmasters on one directory
        assert ours.postmaster_pid() == running[0] != first

        async def query() -> int:
            while True:  # crash recovery may still be running
                try:
                    conn = await asyncpg.connect(ours.dsn("postgres"))
                except asyncpg.CannotConnectNowError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.1)
                    continue
                try:
                    return int(await conn.fetchval("SELECT 41 + 1"))
                finally:
                    await conn.close()

        deadline = time.monotonic() + 10
        assert asyncio.run(query()) == 42
        proc.stdin.write("\n")
        proc.stdin.flush()
        holder_restarts = int(proc.stdout.readline())
        assert proc.wait(30) == 0
        assert ours.restarts + holder_restarts == 1  # exactly one of the two restarted it
        assert _postmasters(pgdata) == running  # the holder left; we still use it
        ours.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert _wait_stopped(pgdata), "the last process to leave did not stop the restarted server"


@pytest.mark.slow
def test_db_stop_stops_an_orphaned_server_but_not_one_in_use(tmp_path: Path) -> None:
    env = {"AMRITA_MEMORY_DATA_DIR": str(tmp_path)}
    proc, holder_pid = _holder(tmp_path)
    try:
        refused = run_cli("db", "stop", env=env)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert str(proc.pid) in refused.stdout  # names the process that uses it
        assert _postmaster_pid(tmp_path / "pg") == holder_pid
    finally:
        proc.send_signal(signal.SIGKILL)  # the only user dies: the server is orphaned
        proc.wait(10)
    assert _postmaster_pid(tmp_path / "pg") == holder_pid
    stopped = run_cli("db", "stop", env=env)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert _wait_stopped(tmp_path / "pg", seconds=5)
    again = run_cli("db", "stop", env=env)
    assert again.returncode == 0
    assert "not running" in again.stdout
