"""Reads that may lag go to a streaming replica (issue 23): ``[database] read_url`` at a
standby built from the embedded binaries. With its replay paused, the per-turn block and
the admin page's memory list show the replica's (older) state while the writes and the
tools' reads stay on the primary; resumed, the replica catches up."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest

from amrita_memory_pg import ToolContext
from amrita_memory_pg.storage.admin import AdminRepository, MemoryQuery
from tests.support.memory import memory_on
from tests.support.pg import PgServer
from tests.support.replica import Replica, run_replica


@pytest.fixture(scope="module")
def replica(pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:
    with run_replica(pg_server.admin_dsn, tmp_path_factory.mktemp("replica")) as running:
        yield running


async def _caught_up(primary: asyncpg.Connection, standby: asyncpg.Connection) -> None:
    target = await primary.fetchval("SELECT pg_current_wal_lsn()")
    for _ in range(400):
        replayed = await standby.fetchval("SELECT pg_last_wal_replay_lsn()")
        if replayed is not None and await standby.fetchval(
            "SELECT $1::pg_lsn >= $2::pg_lsn", replayed, target
        ):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the replica did not catch up")


async def test_the_block_and_the_list_pages_read_the_replica_and_writes_go_to_the_primary(
    db_dsn: str, replica: Replica, tmp_path: Path
) -> None:
    database = urlsplit(db_dsn).path.lstrip("/")
    read_dsn = replica.dsn(database)
    primary = await asyncpg.connect(db_dsn)
    lobby = await asyncpg.connect(replica.dsn("postgres"))
    try:
        await _caught_up(primary, lobby)  # the database itself reached the standby
    finally:
        await lobby.close()
    standby = await asyncpg.connect(read_dsn)
    try:
        async with memory_on(db_dsn, tmp_path / "data", database__read_url=read_dsn) as mem:
            assert mem.store.read_pool is not mem.pool
            ctx = ToolContext(platform="qq", user_id="10001", roles=frozenset())
            key = ctx.session_key
            await mem.call_tool("update_memo", {"content": "第一版备忘"}, ctx)
            first = await mem.memories.add(partition_key=key, scope="user", content="用户喜欢猫")
            await _caught_up(primary, standby)
            assert "第一版备忘" in await mem.memory_block(ctx)
            await standby.execute("SELECT pg_wal_replay_pause()")
            try:
                await mem.call_tool("update_memo", {"content": "第二版备忘"}, ctx)
                second = await mem.memories.add(
                    partition_key=key, scope="user", content="用户住在上海"
                )
                await asyncio.sleep(0.3)
                # the replica has not replayed the writes: the block still shows the old memo
                block = await mem.memory_block(ctx)
                assert "第一版备忘" in block and "第二版备忘" not in block
                page, total = await AdminRepository(mem.pool, mem.store.read_pool).memory_page(
                    key, MemoryQuery(), limit=10, offset=0
                )
                assert ([r.id for r in page], total) == ([first.id], 1)
                # the tools read the primary: a write then a read in one turn sees the write
                assert "第二版备忘" in await mem.call_tool("read_memo", {}, ctx)
                assert await mem.memories.count(key) == 2
            finally:
                await standby.execute("SELECT pg_wal_replay_resume()")
            await _caught_up(primary, standby)
            block = await mem.memory_block(ctx)
            assert "第二版备忘" in block and "第一版备忘" not in block
            page, total = await AdminRepository(mem.pool, mem.store.read_pool).memory_page(
                key, MemoryQuery(), limit=10, offset=0
            )
            assert {r.id for r in page} == {first.id, second.id} and total == 2
            with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
                await mem.store.read_pool.execute("DELETE FROM amrita_memory.memo")
    finally:
        await primary.close()
        await standby.close()
