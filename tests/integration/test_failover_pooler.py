"""docs/deployment.md's fleet recipes, followed literally against real servers: a failover
when ``DATABASE_URL`` points at PgBouncer (promote the standby, repoint PgBouncer, reload:
the same store writes again without a restart), ``DATABASE_READ_URL`` through a second
PgBouncer entry at the replica, and a synchronous primary whose only standby is down
(every commit waits; ``synchronous_standby_names = ''`` and a reload let writes through)."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AbstractContextManager
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest

from amrita_memory_pg import ToolContext
from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.memory import Memory
from tests.support.memory import memory_on
from tests.support.pg import PgServer
from tests.support.pgbouncer import run_pgbouncer
from tests.support.replica import Node, primary_and_standby, run_replica

SYNC = ("synchronous_standby_names='*'", "synchronous_commit=remote_apply")
KEY = "QQPlatform_Private_50001"


def _pair(
    pg_server: PgServer, factory: pytest.TempPathFactory, *settings: str
) -> AbstractContextManager[tuple[Node, Node]]:
    return primary_and_standby(
        pg_server.admin_dsn, factory.mktemp("primary"), factory.mktemp("standby"), *settings
    )


def _entry(node: Node, database: str) -> str:
    return f"host={node.socket_dir} port={node.port} dbname={database} user=postgres"


async def _add(mem: Memory, text: str) -> str:
    record = await mem.memories.add(partition_key=KEY, scope="user", content=text)
    return record.id


async def _add_until_it_works(mem: Memory, text: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while True:
        try:
            return await _add(mem, text)
        except (AmritaMemoryError, OSError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def test_failover_behind_pgbouncer_is_a_repoint_and_a_reload(
    pg_server: PgServer, db_dsn: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    database = urlsplit(db_dsn).path.lstrip("/")
    with (
        _pair(pg_server, tmp_path_factory, *SYNC) as (primary, standby),
        run_pgbouncer(
            pg_server.admin_dsn,
            tmp_path_factory.mktemp("bouncer"),
            login_retry=1,
            databases={database: _entry(primary, database)},
        ) as bouncer,
    ):
        async with memory_on(
            bouncer.dsn(database),
            tmp_path / "data",
            database__pooler="transaction",
            database__connect_timeout=3.0,
        ) as mem:
            before = await _add(mem, "故障切换之前写入")
            primary.stop("immediate")
            standby.promote()
            # PgBouncer still points at the dead primary: nothing gets through
            with pytest.raises((AmritaMemoryError, OSError)):
                await _add(mem, "切换到一半")
            bouncer.repoint(database, _entry(standby, database))
            after = await _add_until_it_works(mem, "故障切换之后写入", 30)
            ids = {r.id for r in (await mem.memories.list_page(KEY, limit=10))[0]}
    # the acknowledged write survived (synchronous), the new one is on the promoted node
    assert {before, after} <= ids


async def test_a_read_replica_behind_its_own_pgbouncer_entry_serves_the_reads(
    pg_server: PgServer, db_dsn: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    database = urlsplit(db_dsn).path.lstrip("/")
    with run_replica(pg_server.admin_dsn, tmp_path_factory.mktemp("replica")) as replica:
        replica_entry = (
            f"host={replica.socket_dir} port={replica.port} dbname={database} user=postgres"
        )
        with run_pgbouncer(
            pg_server.admin_dsn,
            tmp_path_factory.mktemp("bouncer"),
            databases={f"{database}_ro": replica_entry},
        ) as bouncer:
            standby = await asyncpg.connect(replica.dsn("postgres"))
            try:
                for _ in range(200):  # the test database has reached the replica
                    if await standby.fetchval(
                        "SELECT count(*) FROM pg_database WHERE datname = $1", database
                    ):
                        break
                    await asyncio.sleep(0.05)
            finally:
                await standby.close()
            read_dsn = replica.dsn(database)
            async with (
                memory_on(
                    bouncer.dsn(database),
                    tmp_path / "data",
                    database__pooler="transaction",
                    database__read_url=bouncer.dsn(f"{database}_ro"),
                ) as mem,
                memory_on(db_dsn, tmp_path / "other") as other,
            ):
                ctx = ToolContext(platform="qq", user_id="50001")
                await other.memories.add(partition_key=KEY, scope="user", content="用户喜欢猫")
                found = await _search_until(mem, ctx, "猫", present=True)
                assert "用户喜欢猫" in found
                paused = await asyncpg.connect(read_dsn)
                try:
                    await paused.execute("SELECT pg_wal_replay_pause()")
                    await other.memories.add(partition_key=KEY, scope="user", content="用户养狗")
                    await asyncio.sleep(0.5)
                    # the replica has not replayed it: the read went there, through PgBouncer
                    assert "用户养狗" not in await _search(mem, ctx, "狗")
                    await paused.execute("SELECT pg_wal_replay_resume()")
                    assert "用户养狗" in await _search_until(mem, ctx, "狗", present=True)
                finally:
                    await paused.execute("SELECT pg_wal_replay_resume()")
                    await paused.close()


async def _search(mem: Memory, ctx: ToolContext, query: str) -> str:
    reply = json.loads(
        await mem.call_tool(
            "read_memory", {"query": query, "scope": "user", "mode": "keyword"}, ctx
        )
    )
    assert reply["status"] == "success", reply
    return json.dumps(reply, ensure_ascii=False)


async def _search_until(mem: Memory, ctx: ToolContext, query: str, *, present: bool) -> str:
    for _ in range(100):
        found = await _search(mem, ctx, query)
        if (query in found) == present:
            return found
        await asyncio.sleep(0.1)
    return found


async def test_a_synchronous_primary_blocks_every_commit_while_its_only_standby_is_down(
    pg_server: PgServer, db_dsn: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    database = urlsplit(db_dsn).path.lstrip("/")
    with _pair(pg_server, tmp_path_factory) as (primary, standby):
        # as an operator configures it (postgresql.conf / ALTER SYSTEM, not the command
        # line, which no ALTER SYSTEM could override later)
        await _configure(primary, *SYNC)
        async with memory_on(
            primary.dsn(database),
            tmp_path / "data",
            database__statement_timeout=1.0,
            database__command_timeout=3.0,
        ) as mem:
            await _add(mem, "备库在线时写入")
            standby.stop()
            started = time.monotonic()
            # the commit waits for a standby that is not there: statement_timeout does not
            # end that wait, only the client's command_timeout does — an unknown outcome
            with pytest.raises(AmritaMemoryError):
                await _add(mem, "备库离线时写入")
            assert time.monotonic() - started >= 2.5
            local = await asyncpg.connect(primary.dsn(database))
            try:
                # committed on the primary all the same (PostgreSQL's rule for a cancelled
                # wait): a retried write_memory finds it (write_dedup_seconds)
                assert await local.fetchval(
                    "SELECT count(*) FROM amrita_memory.memory WHERE content = $1",
                    "备库离线时写入",
                )
            finally:
                await local.close()
            # what docs/deployment.md says to do while the only standby is down
            await _configure(primary, "synchronous_standby_names=''")
            started = time.monotonic()
            await _add_until_it_works(mem, "改为异步之后写入", 10)
            assert time.monotonic() - started < 5


async def _configure(node: Node, *settings: str) -> None:
    """``ALTER SYSTEM SET`` each ``name=value``, then reload."""
    conn = await asyncpg.connect(node.dsn("postgres"))
    try:
        for setting in settings:
            name, _, value = setting.partition("=")
            await conn.execute(f"ALTER SYSTEM SET {name} = {value}")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()
