"""Reads that may lag go to a streaming replica: ``[database] read_url`` at a
standby built from the embedded binaries. With its replay paused, the per-turn block,
the admin page's memory list, searches (chat tool, /memory, page, CLI) and the CLI's
lists show the replica's (older) state while the writes, the L3 loop and a read after
this process's own write stay on the primary; a search's access log arrives on the
primary behind the read; resumed, the replica catches up."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest

from amrita_memory_pg import ToolContext
from amrita_memory_pg.domain.errors import MemoryPaused
from amrita_memory_pg.domain.trail import Actor, Recall, acting
from amrita_memory_pg.services.trail import AccessLogWriter, BehindEntry
from amrita_memory_pg.storage.admin import AdminRepository, MemoryQuery
from amrita_memory_pg.storage.trail import TrailRepository
from tests.support.cli import run_cli
from tests.support.memory import add_knowledge, memory_on
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


async def _connect_both(
    db_dsn: str, replica: Replica
) -> tuple[str, asyncpg.Connection, asyncpg.Connection]:
    """The test database on the standby: its DSN, a connection to the primary and one to
    the standby, once the database itself has reached the standby."""
    read_dsn = replica.dsn(urlsplit(db_dsn).path.lstrip("/"))
    primary = await asyncpg.connect(db_dsn)
    lobby = await asyncpg.connect(replica.dsn("postgres"))
    try:
        await _caught_up(primary, lobby)
    finally:
        await lobby.close()
    return read_dsn, primary, await asyncpg.connect(read_dsn)


async def test_the_block_and_the_list_pages_read_the_replica_and_writes_go_to_the_primary(
    db_dsn: str, replica: Replica, tmp_path: Path
) -> None:
    read_dsn, primary, standby = await _connect_both(db_dsn, replica)
    try:
        async with (
            memory_on(db_dsn, tmp_path / "data", database__read_url=read_dsn) as mem,
            memory_on(db_dsn, tmp_path / "other") as other,
        ):
            assert mem.store.read_pool is not mem.pool
            ctx = ToolContext(platform="qq", user_id="10001", roles=frozenset())
            key = ctx.session_key
            await other.call_tool("update_memo", {"content": "第一版备忘"}, ctx)
            first = await other.memories.add(partition_key=key, scope="user", content="用户喜欢猫")
            await _caught_up(primary, standby)
            assert "第一版备忘" in await mem.memory_block(ctx)
            await standby.execute("SELECT pg_wal_replay_pause()")
            try:
                # written by another process of the fleet (this one's own writes: the next test)
                await other.call_tool("update_memo", {"content": "第二版备忘"}, ctx)
                second = await other.memories.add(
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


async def test_the_next_block_shows_this_process_own_writes_however_far_the_replica_lags(
    db_dsn: str, replica: Replica, tmp_path: Path
) -> None:
    """A memo or memory this process wrote within ``read_own_writes_seconds`` sends the
    next turn's block to the primary; another chat's block still reads the replica."""
    read_dsn, primary, standby = await _connect_both(db_dsn, replica)
    try:
        async with (
            memory_on(
                db_dsn, tmp_path / "data", database__read_url=read_dsn, injection__enabled=True
            ) as mem,
            memory_on(db_dsn, tmp_path / "other") as other,
        ):
            alice = ToolContext(platform="qq", user_id="10011", roles=frozenset())
            bob = ToolContext(platform="qq", user_id="10012", roles=frozenset())
            await other.call_tool("update_memo", {"content": "爱丽丝的旧备忘"}, alice)
            await other.call_tool("update_memo", {"content": "鲍勃的旧备忘"}, bob)
            await _caught_up(primary, standby)
            await standby.execute("SELECT pg_wal_replay_pause()")
            try:
                # this process: alice's memo by the chat tool, a memory by /memory add
                await mem.call_tool("update_memo", {"content": "爱丽丝的新备忘"}, alice)
                await mem.memories.add(
                    partition_key=alice.session_key, scope="user", content="用户会弹钢琴"
                )
                # another process: bob's
                await other.call_tool("update_memo", {"content": "鲍勃的新备忘"}, bob)
                await asyncio.sleep(0.3)
                block = await mem.memory_block(alice)
                assert "爱丽丝的新备忘" in block and "用户会弹钢琴" in block, block
                assert "爱丽丝的旧备忘" not in block
                # bob's partition was not written here: his block read the (paused) replica
                block = await mem.memory_block(bob)
                assert "鲍勃的旧备忘" in block and "鲍勃的新备忘" not in block
            finally:
                await standby.execute("SELECT pg_wal_replay_resume()")
            await _caught_up(primary, standby)
            assert "鲍勃的新备忘" in await mem.memory_block(bob)
    finally:
        await primary.close()
        await standby.close()


async def _accesses(primary: asyncpg.Connection, key: str) -> list[tuple[str, str, str | None]]:
    rows = await primary.fetch(
        "SELECT memory_id, surface, query FROM amrita_memory.memory_access"
        " WHERE partition_key = $1 ORDER BY at, seq",
        key,
    )
    return [(r["memory_id"], r["surface"], r["query"]) for r in rows]


async def test_searches_read_the_replica_and_their_access_log_arrives_on_the_primary(
    db_dsn: str, replica: Replica, tmp_path: Path
) -> None:
    read_dsn, primary, standby = await _connect_both(db_dsn, replica)
    ctx = ToolContext(platform="qq", user_id="10002", roles=frozenset())
    key = ctx.session_key
    try:
        # the writer is another process of the fleet; the reader has the replica
        async with (
            memory_on(db_dsn, tmp_path / "w") as writer,
            memory_on(db_dsn, tmp_path / "r", database__read_url=read_dsn) as reader,
        ):
            first = await writer.memories.add(partition_key=key, scope="user", content="用户喜欢猫")
            await _caught_up(primary, standby)
            await standby.execute("SELECT pg_wal_replay_pause()")
            try:
                second = await writer.memories.add(
                    partition_key=key, scope="user", content="用户喜欢狗"
                )
                await asyncio.sleep(0.3)
                # the chat tool's read_memory ran on the replica: the older state
                raw = await reader.call_tool(
                    "read_memory", {"scope": "user", "query": "宠物", "mode": "vector"}, ctx
                )
                reply = json.loads(raw)
                assert "ids" in reply, raw
                assert reply["ids"] == [[first.id]]
                # /memory search (a recall) and the page's / the CLI's search (none)
                hits = await reader.memories.search(
                    key, "喜欢", mode="vector", recall=Recall("command", key, "10002")
                )
                assert [h.record.id for h in hits] == [first.id]
                assert [
                    h.record.id for h in await reader.memories.search(key, "喜欢", mode="vector")
                ] == [first.id]
                assert (await reader.memories.list_page(key, limit=10))[1] == 1
                # ... and the access log of both recalls arrived on the primary
                await reader.trail.flush()
                assert await _accesses(primary, key) == [
                    (first.id, "tool", "宠物"),
                    (first.id, "command", "喜欢"),
                ]
                assert (reader.trail.behind.written, reader.trail.behind.dropped) == (2, 0)
                # the L3 loop reads the primary
                with acting(Actor("l3", f"cycle 1 · {key}")):
                    seen = await reader.memories.search(key, "喜欢", top_k=10, mode="vector")
                assert {h.record.id for h in seen} == {first.id, second.id}
                # a write then a read in the same turn: the read goes to the primary
                wrote = json.loads(
                    await reader.call_tool(
                        "write_memory",
                        {
                            "scope": "user",
                            "content": "用户住在北京",
                            "tags": "住址",
                            "importance": "low",
                        },
                        ctx,
                    )
                )
                reply = json.loads(
                    await reader.call_tool(
                        "read_memory",
                        {"scope": "user", "query": "住在哪里", "top_k": 10, "mode": "vector"},
                        ctx,
                    )
                )
                assert "memory_id" in wrote, wrote
                assert set(reply["ids"][0]) == {first.id, second.id, wrote["memory_id"]}
                # logged by the one statement on the primary, nothing queued behind
                assert reader.trail.behind.written == 2
                assert len(await _accesses(primary, key)) == 5
                assert (await reader.memories.list_page(key, limit=10))[1] == 3
                # the page's list of a partition it just edited reads the primary too
                # (kit.admin_store(request, key)); another partition's reads the replica
                route = reader.memories.repo.route
                assert route.pool_for(key) is reader.pool
                assert route.pool_for("QQPlatform_Private_10009") is reader.store.read_pool
                _page, total = await AdminRepository(reader.pool, route.pool_for(key)).memory_page(
                    key, MemoryQuery(), limit=10, offset=0
                )
                assert total == 3
            finally:
                await standby.execute("SELECT pg_wal_replay_resume()")
            # a partition paused on the primary is paused on the replica once replayed:
            # the replica's statement checks first, finds nothing and logs nothing
            other = ToolContext(platform="qq", user_id="10003", roles=frozenset())
            await writer.memories.add(
                partition_key=other.session_key, scope="user", content="用户喜欢茶"
            )
            await writer.trail.pause(other.session_key, by="test")
            await _caught_up(primary, standby)
            with pytest.raises(MemoryPaused):
                await reader.memories.search(
                    other.session_key,
                    "茶",
                    mode="keyword",
                    recall=Recall("command", other.session_key, "10003"),
                )
            await reader.trail.flush()
            assert await _accesses(primary, other.session_key) == []
            assert reader.trail.behind.written == 2
    finally:
        await primary.close()
        await standby.close()


async def test_the_cli_lists_and_searches_on_the_replica(
    db_dsn: str, replica: Replica, tmp_path: Path
) -> None:
    read_dsn, primary, standby = await _connect_both(db_dsn, replica)
    key = "QQPlatform_Private_10004"
    env = {
        "DATABASE_URL": db_dsn,
        "DATABASE_READ_URL": read_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
    }
    try:
        async with memory_on(db_dsn, tmp_path / "w") as writer:
            first = await writer.memories.add(partition_key=key, scope="user", content="用户喜欢猫")
            await add_knowledge(writer, "0a1b2c01", "猫的习性", "猫喜欢晒太阳")
            await _caught_up(primary, standby)
            await standby.execute("SELECT pg_wal_replay_pause()")
            try:
                await writer.memories.add(partition_key=key, scope="user", content="用户喜欢狗")
                await add_knowledge(writer, "0a1b2c02", "狗的习性", "狗喜欢散步")
                kb = run_cli("knowledge", "list", env=env)
                assert kb.returncode == 0, kb.stderr
                assert (
                    "0a1b2c01" in kb.stdout
                    and "0a1b2c02" not in kb.stdout
                    and "1 entries" in kb.stdout
                )
                listed = run_cli("memory", "list", key, env=env)
                assert listed.returncode == 0, listed.stderr
                assert first.id in listed.stdout and "用户喜欢狗" not in listed.stdout
                assert "1 of 1 shown" in listed.stdout
                found = run_cli("memory", "search", key, "喜欢", "--mode", "vector", env=env)
                assert found.returncode == 0, found.stderr
                assert "1 hits" in found.stdout and "用户喜欢狗" not in found.stdout
                # without the replica the same commands see the primary
                del env["DATABASE_READ_URL"]
                listed = run_cli("memory", "list", key, env=env)
                assert "2 of 2 shown" in listed.stdout and "用户喜欢狗" in listed.stdout
                found = run_cli("memory", "search", key, "喜欢", "--mode", "vector", env=env)
                assert "2 hits" in found.stdout
                assert "2 entries" in run_cli("knowledge", "list", env=env).stdout
            finally:
                await standby.execute("SELECT pg_wal_replay_resume()")
    finally:
        await primary.close()
        await standby.close()


async def test_the_access_log_behind_the_reads_is_bounded_and_never_raises(
    db_dsn: str, replica: Replica, tmp_path: Path
) -> None:
    database = urlsplit(db_dsn).path.lstrip("/")
    key = "QQPlatform_Private_10005"
    async with memory_on(db_dsn, tmp_path / "w") as mem:
        record = await mem.memories.add(partition_key=key, scope="user", content="用户喜欢猫")
        entry = BehindEntry(
            key, (record.id,), (0.5,), datetime.now(UTC), Recall("tool", key, "10005"), "猫"
        )
        # a full queue drops (and counts) instead of waiting
        bounded = AccessLogWriter(TrailRepository(mem.pool), keep=20, max_entries=2)
        for _ in range(5):
            bounded.put(entry)
        await bounded.flush()
        assert (bounded.written, bounded.dropped, bounded.failed) == (2, 3, 0)
        primary = await asyncpg.connect(db_dsn)
        try:
            assert len(await _accesses(primary, key)) == 2
            # a primary that does not answer (the log's table locked) holds a close for
            # `within` seconds at most: what is left is dropped and counted
            stuck = AccessLogWriter(TrailRepository(mem.pool), keep=20)
            async with primary.transaction():
                await primary.execute(
                    "LOCK TABLE amrita_memory.memory_access IN ACCESS EXCLUSIVE MODE"
                )
                for _ in range(3):
                    stuck.put(entry)
                started = asyncio.get_running_loop().time()
                await stuck.flush(within=0.5)
                assert asyncio.get_running_loop().time() - started < 3
            assert (stuck.written, stuck.dropped) == (0, 2)
            stuck.put(entry)  # and it writes again afterwards
            await stuck.flush()
            assert stuck.written == 1
            assert len(await _accesses(primary, key)) == 3
        finally:
            await primary.close()
        # a write that fails (here: sent to the read-only standby) is a warning, not an error
        primary = await asyncpg.connect(db_dsn)
        lobby = await asyncpg.connect(replica.dsn("postgres"))
        try:
            await _caught_up(primary, lobby)
        finally:
            await lobby.close()
            await primary.close()
        standby_pool = await asyncpg.create_pool(replica.dsn(database), min_size=1, max_size=1)
        try:
            failing = AccessLogWriter(TrailRepository(standby_pool), keep=20)
            failing.put(entry)
            await failing.flush()
            assert (failing.written, failing.failed) == (0, 1)
        finally:
            await standby_pool.close()
