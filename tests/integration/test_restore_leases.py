"""A restore holds the fleet's restore, backup, re-embed and sweep leases, on
one path for the CLI's ``backup restore`` and the admin page's restore job: each refuses
while the other runs, a restore waits for a sweep elsewhere, and no backup (made by
hand, by the page or by the schedule) runs beside a restore. The CLI runs as its own
process; a restore is held mid-way by a table lock another connection keeps."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from amrita_memory_pg.maintenance.backup import create_backup, list_backups
from amrita_memory_pg.maintenance.scheduled import run_scheduled_backup
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.leases import LeaseRepository
from amrita_memory_pg.web.jobs import JobRunner, memory_operations, restore_operation
from tests.support.cli import COMMAND, REPO, clean_env, run_cli
from tests.support.memory import memory_on

KEY = "QQPlatform_Private_10001"
# a restore blocked on a table lock waits as long as the test keeps it
NO_TIMEOUTS = {"database__lock_timeout": 0, "database__statement_timeout": 0}


def _env(dsn: str, data: Path) -> dict[str, str]:
    return {
        "DATABASE_URL": dsn,
        "AMRITA_MEMORY_DATA_DIR": str(data),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
        "AMRITA_MEMORY_DATABASE__LOCK_TIMEOUT": "0",
        "AMRITA_MEMORY_DATABASE__STATEMENT_TIMEOUT": "0",
    }


async def _count(pool: asyncpg.Pool, sql: str) -> int:
    return int(await pool.fetchval(sql))


@asynccontextmanager
async def _memory_locked(dsn: str) -> AsyncIterator[None]:
    """Every reader of ``amrita_memory.memory`` waits (a restore stops mid-way) until the block ends."""
    conn = await asyncpg.connect(dsn)
    try:
        async with conn.transaction():
            await conn.execute("LOCK TABLE amrita_memory.memory IN ACCESS EXCLUSIVE MODE")
            yield
    finally:
        await conn.close()


async def _until_held(
    pool: asyncpg.Pool, owner: str, proc: subprocess.Popen[str] | None = None
) -> None:
    """Until ``owner`` (a prefix) holds the four leases of a restore."""
    deadline = time.monotonic() + 60
    sql = "SELECT kind FROM amrita_memory.lease WHERE owner LIKE $1 || '%' ORDER BY kind"
    while [r["kind"] for r in await pool.fetch(sql, owner)] != [
        "backup",
        "reembed",
        "restore",
        "sweep",
    ]:
        assert proc is None or proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the restore never held its leases"
        await asyncio.sleep(0.05)


async def test_cli_restore_waits_for_a_sweep_elsewhere_and_runs_once_it_ended(
    db_dsn: str, tmp_path: Path
) -> None:
    env = _env(db_dsn, tmp_path / "data")
    assert run_cli("memory", "add", KEY, "我喜欢猫", env=env).returncode == 0
    made = run_cli("backup", "create", env=env)
    assert made.returncode == 0, made.stderr
    backup = next((tmp_path / "data").rglob("*.jsonl"))
    assert run_cli("memory", "add", KEY, "我也喜欢狗", env=env).returncode == 0
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
    try:
        leases = LeaseRepository(pool)
        assert (await leases.acquire("sweep", "", "bot-b:202:y", "t-sweep", 60)).acquired
        refused = run_cli("backup", "restore", "--yes", str(backup), env=env)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "sweep is held by bot-b:202:y" in refused.stderr
        # nothing touched: both memories, no safety backup, its other claims released
        assert await _count(pool, "SELECT count(*) FROM amrita_memory.memory") == 2
        assert len(list((tmp_path / "data").rglob("*.jsonl"))) == 1
        assert await _count(pool, "SELECT count(*) FROM amrita_memory.lease") == 1
        assert await leases.release("sweep", "", "t-sweep")
        restored = run_cli("backup", "restore", "--yes", str(backup), env=env)
        assert restored.returncode == 0, restored.stderr
        assert "backed up before the restore" in restored.stdout
        assert await pool.fetchval("SELECT array_agg(content) FROM amrita_memory.memory") == [
            "我喜欢猫"
        ]
        assert await _count(pool, "SELECT count(*) FROM amrita_memory.lease") == 0
    finally:
        await pool.close()


async def _web_restore(runner: JobRunner, mem: Memory, path: Path) -> str:
    job = await runner.start("restore", by="root", operation=restore_operation(mem, path))
    return job.id


async def test_web_and_cli_restores_refuse_each_other_and_no_backup_runs_beside_one(
    db_dsn: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    env = _env(db_dsn, data)
    async with memory_on(db_dsn, data, **NO_TIMEOUTS) as mem:
        mem.leases.owner = "web-a:101:x"
        await mem.memories.add(partition_key=KEY, scope="user", content="我喜欢猫")
        path = (await create_backup(mem.store)).jsonl_path
        await mem.memories.add(partition_key=KEY, scope="user", content="我也喜欢狗")
        runner = JobRunner(memory_operations(mem), fleet=mem, beat_seconds=0.1)
        memories = "SELECT count(*) FROM amrita_memory.memory"

        # the page's restore runs (held mid-way): the CLI's restore and backup refuse,
        # the scheduled backup leaves its slot for a later tick
        async with _memory_locked(db_dsn):
            job_id = await _web_restore(runner, mem, path)
            await _until_held(mem.pool, "web-a:101:x")
            cli = await asyncio.to_thread(run_cli, "backup", "restore", "--yes", str(path), env=env)
            assert cli.returncode == 2, cli.stdout + cli.stderr
            assert "restore is held by web-a:101:x" in cli.stderr
            backup = await asyncio.to_thread(run_cli, "backup", "create", env=env)
            assert backup.returncode == 2 and "backup is held by web-a:101:x" in backup.stderr
            cron = await asyncio.to_thread(run_cli, "backup", "scheduled", "--force", env=env)
            assert cron.returncode == 0, cron.stderr
            assert "waits: the backup lease is held by web-a:101:x" in cron.stdout
            tick = await run_scheduled_backup(mem.store, force=True)
            assert (tick.claimed, tick.held_by, tick.backup) == (False, "web-a:101:x", None)
        done = await asyncio.wait_for(runner.wait(job_id), 60)
        assert (done.state, done.error) == ("done", None), done
        assert await _count(mem.pool, memories) == 1
        assert (
            await _count(mem.pool, "SELECT count(last_slot) FROM amrita_memory.backup_schedule")
            == 0
        )
        assert {b.reason for b in list_backups(mem.store.backups_dir)} == {
            "manual",
            "before-restore",
        }

        # the CLI's restore runs: the page's restore job ends failed, naming its process
        await mem.memories.add(partition_key=KEY, scope="user", content="又一条")
        async with _memory_locked(db_dsn):
            proc = subprocess.Popen(
                [*COMMAND, "backup", "restore", "--yes", str(path)],
                env=clean_env(env),
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                cli_owner = f"{socket.gethostname()}:{proc.pid}:"
                await _until_held(mem.pool, cli_owner, proc)
                refused = await runner.wait(await _web_restore(runner, mem, path))
                assert refused.state == "failed"
                assert refused.error is not None and f"held by {cli_owner}" in refused.error
                assert "a restore runs there now" in refused.error
                web_backup = await runner.wait((await runner.start("backup", by="root")).id)
                assert web_backup.state == "failed" and f"held by {cli_owner}" in (
                    web_backup.error or ""
                )
                assert "a restore runs there now" in (web_backup.error or "")
            except BaseException:
                proc.kill()
                raise
        out, err = await asyncio.to_thread(proc.communicate, timeout=120)
        assert proc.returncode == 0, out + err
        assert await _count(mem.pool, memories) == 1
        assert await _count(mem.pool, "SELECT count(*) FROM amrita_memory.lease") == 0
