"""The core behaviour through a real PgBouncer in transaction pooling mode:
memories, the memo, the per-turn block, 30 concurrent users through ``open_memory``,
the CLI, and the timeouts as ``SET LOCAL``. Before the pooler setting every runtime call
failed with DuplicatePreparedStatementError, and the CLI with "unsupported startup
parameter: statement_timeout"."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest

from amrita_memory_pg import ToolContext
from amrita_memory_pg.memory import Memory
from tests.support.cli import run_cli
from tests.support.memory import memory_on
from tests.support.pg import PgServer
from tests.support.pgbouncer import Bouncer, run_pgbouncer


@pytest.fixture(scope="module")
def bouncer(pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bouncer]:
    # fewer server connections than clients: transactions of different clients share them
    with run_pgbouncer(
        pg_server.admin_dsn, tmp_path_factory.mktemp("pgbouncer"), pool_size=4
    ) as running:
        yield running


@pytest.fixture
def bounced_dsn(db_dsn: str, bouncer: Bouncer) -> str:
    """The per-test database, reached through PgBouncer."""
    return bouncer.dsn(urlsplit(db_dsn).path.lstrip("/"))


@pytest.fixture
async def bounced(bounced_dsn: str, tmp_path: Path) -> AsyncIterator[Memory]:
    async with memory_on(
        bounced_dsn, tmp_path / "data", database__pooler="transaction", database__pool_max_size=6
    ) as mem:
        yield mem


def _ctx(user: str, group: str | None = None) -> ToolContext:
    return ToolContext(platform="qq", user_id=user, group_id=group, roles=frozenset())


async def _tool(mem: Memory, name: str, args: dict[str, Any], ctx: ToolContext) -> Any:
    reply = json.loads(await mem.call_tool(name, args, ctx))
    assert reply.get("status") == "success", (name, reply)
    return reply


async def test_memories_memo_and_the_block_work_through_pgbouncer(bounced: Memory) -> None:
    ctx = _ctx("10001")
    written = await _tool(
        bounced,
        "write_memory",
        {"content": "用户喜欢猫", "tags": "偏好", "importance": "high", "scope": "user"},
        ctx,
    )
    other = await _tool(
        bounced,
        "write_memory",
        {"content": "用户住在上海", "tags": "地点", "importance": "medium", "scope": "user"},
        ctx,
    )
    found = await _tool(bounced, "read_memory", {"query": "猫", "scope": "user"}, ctx)
    assert found["documents"][0][0] == "用户喜欢猫"
    await _tool(
        bounced,
        "update_memory",
        {"id": written["memory_id"], "content": "用户喜欢橘猫", "scope": "user"},
        ctx,
    )
    await _tool(bounced, "delete_memory", {"id": other["memory_id"], "scope": "user"}, ctx)
    listed = await _tool(bounced, "list_memory", {"scope": "user"}, ctx)
    assert [m["content_preview"] for m in listed["memories"]] == ["用户喜欢橘猫"]
    await _tool(bounced, "append_memo", {"content": "下周三考试"}, ctx)
    memo = await _tool(bounced, "read_memo", {}, ctx)
    assert memo["memo"] == "下周三考试"
    block = await bounced.memory_block(ctx)
    assert "下周三考试" in block
    # leases are claimed through the pooler too
    async with bounced.leases.hold("sweep") as lease:
        assert lease is not None
    # the timeouts are per transaction (SET LOCAL), never on the session
    async with bounced.pool.acquire() as conn:
        async with conn.transaction():
            assert await conn.fetchval("SHOW statement_timeout") == "10s"
            assert await conn.fetchval("SHOW lock_timeout") == "5s"
        assert await conn.fetchval("SHOW statement_timeout") == "0"


async def test_a_slow_statement_in_a_transaction_is_aborted_by_the_server_through_pgbouncer(
    bounced_dsn: str, tmp_path: Path
) -> None:
    async with (
        memory_on(
            bounced_dsn,
            tmp_path / "data",
            database__pooler="transaction",
            database__statement_timeout=0.5,
            database__command_timeout=5.0,
        ) as mem,
        mem.pool.acquire() as conn,
    ):
        with pytest.raises(asyncpg.QueryCanceledError):
            async with conn.transaction():
                await conn.execute("SELECT pg_sleep(2)")


async def test_thirty_concurrent_users_write_and_read_through_open_memory_behind_pgbouncer(
    bounced_dsn: str, tmp_path: Path
) -> None:
    # pooler = auto (the default): PgBouncer's refusal of the startup timeouts switches it
    async with memory_on(bounced_dsn, tmp_path / "data", database__pool_max_size=8) as mem:

        async def user(n: int) -> tuple[int, list[str]]:
            ctx = _ctx(str(20000 + n), group="777" if n % 3 == 0 else None)
            for i in range(3):
                await _tool(
                    mem,
                    "write_memory",
                    {
                        "content": f"用户{n}的第{i}件事",
                        "tags": "t",
                        "importance": "medium",
                        "scope": "user",
                    },
                    ctx,
                )
            await _tool(mem, "append_memo", {"content": f"备忘{n}"}, ctx)
            listed = await _tool(mem, "list_memory", {"scope": "user", "limit": 10}, ctx)
            await mem.memory_block(ctx)
            return n, sorted(m["content_preview"] for m in listed["memories"])

        results = await asyncio.gather(*(user(n) for n in range(30)))
        for n, contents in results:
            assert contents == [f"用户{n}的第{i}件事" for i in range(3)]
        total = await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory")
        memos = await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memo")
        group_memo = await _tool(mem, "read_memo", {}, _ctx("20000", group="777"))
    # 20 private memos and one group memo holding its 10 members' appends, none lost
    assert (total, memos) == (90, 21)
    assert sorted(group_memo["memo"].splitlines()) == sorted(f"备忘{n}" for n in range(0, 30, 3))


async def test_the_cli_adds_a_memory_through_pgbouncer(
    bounced_dsn: str, db_dsn: str, tmp_path: Path
) -> None:
    env = {
        "DATABASE_URL": bounced_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
    }
    added = run_cli("memory", "add", "QQPlatform_Private_10001", "用户喜欢猫", env=env)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added ")
    assert "a transaction-mode pooler (PgBouncer)" in added.stderr  # detected, said once
    explicit = run_cli(
        "memory",
        "add",
        "QQPlatform_Private_10001",
        "用户住在上海",
        env={**env, "AMRITA_MEMORY_DATABASE__POOLER": "transaction"},
    )
    assert explicit.returncode == 0, explicit.stderr
    assert explicit.stderr == ""
    conn = await asyncpg.connect(db_dsn)
    try:
        rows = await conn.fetch("SELECT content FROM amrita_memory.memory ORDER BY content")
    finally:
        await conn.close()
    assert sorted(r["content"] for r in rows) == sorted(["用户喜欢猫", "用户住在上海"])


async def test_db_upgrade_then_memory_add_on_an_empty_database_through_pgbouncer(
    empty_db_dsn: str, bouncer: Bouncer, tmp_path: Path
) -> None:
    env = {
        "DATABASE_URL": bouncer.dsn(urlsplit(empty_db_dsn).path.lstrip("/")),
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
        "AMRITA_MEMORY_DATABASE__POOLER": "transaction",
    }
    upgraded = run_cli("db", "upgrade", env=env)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "schema upgraded: (empty) -> " in upgraded.stdout
    added = run_cli("memory", "add", "global", "机器人的名字叫小明", env=env)
    assert added.returncode == 0, added.stderr
    listed = run_cli("memory", "list", "global", env=env)
    assert "机器人的名字叫小明" in listed.stdout


async def test_pgbouncer_keeps_serving_after_logging_more_than_a_pipe_holds(
    pg_server: PgServer, db_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The harness's own PgBouncer (tests/support/pgbouncer.py): it logs every line to its
    console too, which went to a pipe nobody read. Past 64 KB (a server restart's login
    failures in bench/fleet.py) it blocked in write(2) and every client behind it hung:
    the fleet load test's rare "0 writes after the restart"."""
    workdir = tmp_path_factory.mktemp("pgbouncer-console")  # reachable by PgBouncer's user
    with run_pgbouncer(pg_server.admin_dsn, workdir) as running:
        dsn = running.dsn(urlsplit(db_dsn).path.lstrip("/"))

        async def connect_many(n: int) -> int:
            for _ in range(n):
                conn = await asyncpg.connect(dsn, statement_cache_size=0)
                await conn.close()
            conn = await asyncpg.connect(dsn, statement_cache_size=0)
            try:
                return int(await conn.fetchval("SELECT 42"))
            finally:
                await conn.close()

        # each connection logs ~300 bytes (login attempt, closing): 400 of them ~120 KB
        assert await asyncio.wait_for(connect_many(400), timeout=60) == 42
        assert (workdir / "pgbouncer.out").stat().st_size > 64 * 1024
