"""A write reported as failed is not in the database afterwards; a write
whose outcome cannot be known says so and how to check; an identical retry is safe.

The F7 run: during a 20 s database stall all 27 errors read «写入记忆失败: » and 10 of
those writes were committed afterwards, so an LLM that retried made duplicates. Here the
same faults are made for real — a lock held by another session (lock_timeout), a table
lock that outlasts statement_timeout, every process of a dedicated embedded server
stopped with SIGSTOP for longer than the client's command_timeout, and a backend
terminated with pg_terminate_backend while its statement waits — and the replies are
compared with what the database holds afterwards.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import psutil
import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.pg.session import mark_session_changed
from amrita_memory_pg.storage.pg.timeouts import lift_statement_timeout
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on

ALICE = ToolContext(platform="qq", user_id="10001")
BOB = ToolContext(platform="qq", user_id="10002")
ALICE_IN_GROUP = ToolContext(platform="qq", user_id="10001", group_id="20001")
BOB_IN_GROUP = ToolContext(platform="qq", user_id="10002", group_id="20001")


async def call(mem: Memory, tool: str, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(await mem.call_tool(tool, args, ctx))
    return reply


async def write(
    mem: Memory, content: str, ctx: ToolContext = ALICE, scope: str = "user"
) -> dict[str, Any]:
    args = {"content": content, "tags": "t", "importance": "medium", "scope": scope}
    return await call(mem, "write_memory", args, ctx)


async def rows_with(mem: Memory, content: str) -> list[str]:
    rows = await mem.pool.fetch("SELECT id FROM amrita_memory.memory WHERE content = $1", content)
    return [r["id"] for r in rows]


def partition_lock_key(partition: str) -> str:
    """The advisory-lock key expression of the cap (and dedup) lock of a partition."""
    return f"hashtextextended('amrita_memory.partition:' || '{partition}', 0)"


# ---------------------------------------------------------------------------- timeouts


async def test_pool_connections_carry_the_server_side_timeouts(db_dsn: str, tmp_path: Path) -> None:
    """statement_timeout / lock_timeout reach every pooled connection and survive the pool's
    RESET ALL; maintenance lifts statement_timeout for one transaction or one checkout."""
    async with memory_on(
        db_dsn,
        tmp_path,
        database__statement_timeout=3,
        database__lock_timeout=1.5,
        database__pool_min_size=1,
        database__pool_max_size=1,
    ) as mem:
        assert await mem.pool.fetchval("SHOW statement_timeout") == "3s"
        assert await mem.pool.fetchval("SHOW lock_timeout") == "1500ms"
        async with mem.pool.acquire() as conn, conn.transaction():
            await lift_statement_timeout(conn)
            assert await conn.fetchval("SHOW statement_timeout") == "0"
        assert await mem.pool.fetchval("SHOW statement_timeout") == "3s"
        async with mem.pool.acquire() as conn:
            await lift_statement_timeout(conn, local=False)
            assert await conn.fetchval("SHOW statement_timeout") == "0"
            assert await conn.fetchval("SHOW lock_timeout") == "1500ms"
        # The same (only) connection, back from the pool: its defaults are back.
        assert await mem.pool.fetchval("SHOW statement_timeout") == "3s"


async def test_a_clean_release_skips_the_reset_round_trip(db_dsn: str, tmp_path: Path) -> None:
    """The pool resets only connections marked by a session-level change: an unmarked
    session setting survives release (no RESET ALL round trip was sent), a marked one and an
    open transaction do not."""
    async with memory_on(
        db_dsn, tmp_path, database__pool_min_size=1, database__pool_max_size=1
    ) as mem:
        async with mem.pool.acquire() as conn:
            assert conn.get_reset_query() == ""
            await conn.execute("SET application_name = 'unmarked'")
        assert await mem.pool.fetchval("SHOW application_name") == "unmarked"
        async with mem.pool.acquire() as conn:
            await lift_statement_timeout(conn, local=False)
            assert "RESET ALL" in conn.get_reset_query()
            assert conn.get_reset_query() == ""  # asked once per release
            mark_session_changed(conn)
        assert await mem.pool.fetchval("SHOW application_name") != "unmarked"
        conn = await mem.pool.acquire()
        tr = conn.transaction()
        await tr.start()
        await conn.execute("SET LOCAL application_name = 'in_tx'")
        await mem.pool.release(conn)  # asyncpg still rolls back what was left open
        assert await mem.pool.fetchval("SHOW application_name") != "in_tx"


async def test_lock_timeout_refuses_cleanly_and_writes_nothing(db_dsn: str, tmp_path: Path) -> None:
    """Another session holds the partition's cap lock: every write into that partition is
    aborted by the server after lock_timeout, reported as «nothing changed», and is absent."""
    async with memory_on(
        db_dsn, tmp_path, database__lock_timeout=0.3, database__statement_timeout=5
    ) as mem:
        holder = await asyncpg.connect(db_dsn)
        try:
            await holder.execute(
                f"SELECT pg_advisory_lock({partition_lock_key(ALICE.personal_key)})"
            )
            started = time.monotonic()
            blocked, free = await asyncio.gather(
                asyncio.gather(*(write(mem, f"锁住时写入 {i}") for i in range(6))),
                asyncio.gather(*(write(mem, f"别的分区 {i}", BOB) for i in range(3))),
            )
            assert time.monotonic() - started < 5
        finally:
            await holder.close()  # releases the session lock
        for reply in blocked:
            assert reply["status"] == "error"
            assert reply["message"].startswith("写入记忆失败：数据库繁忙（等待锁超时）")
            assert "没有做任何修改" in reply["message"] and "请稍后重试" in reply["message"]
        assert all(r["status"] == "success" for r in free)
        assert await mem.memories.count(ALICE.personal_key) == 0
        # The LLM retries as told: each lands exactly once.
        for i in range(6):
            retry = await write(mem, f"锁住时写入 {i}")
            assert retry["status"] == "success" and "duplicate_of" not in retry
            assert await rows_with(mem, f"锁住时写入 {i}") == [retry["memory_id"]]


async def _seeded_args(mem: Memory, tool: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A memory and a memo to change: the memory's write reply, and the arguments of
    ``tool``'s change of them."""
    first = await write(mem, "原来的内容")
    await call(mem, "append_memo", {"content": "原来的备忘"}, ALICE)
    args: dict[str, Any] = {
        "write_memory": {
            "content": "新内容",
            "tags": "t",
            "importance": "low",
            "scope": "user",
        },
        "update_memory": {"id": first["memory_id"], "content": "新内容", "scope": "user"},
        "delete_memory": {"id": first["memory_id"], "scope": "user"},
        "append_memo": {"content": "新的备忘"},
    }[tool]
    return first, args


@pytest.mark.parametrize("tool", ["write_memory", "update_memory", "delete_memory", "append_memo"])
async def test_statement_timeout_refuses_cleanly_and_changes_nothing(
    db_dsn: str, tmp_path: Path, tool: str
) -> None:
    """A table lock outlasts statement_timeout (lock_timeout off): the server cancels the
    statement (57014), the reply says nothing changed, and nothing did."""
    async with memory_on(
        db_dsn, tmp_path, database__statement_timeout=0.5, database__lock_timeout=0
    ) as mem:
        first, args = await _seeded_args(mem, tool)
        table = "memo" if tool == "append_memo" else "memory"
        holder = await asyncpg.connect(db_dsn)
        try:
            tx = holder.transaction()
            await tx.start()
            await holder.execute(f"LOCK TABLE amrita_memory.{table} IN ACCESS EXCLUSIVE MODE")
            reply = await call(mem, tool, args, ALICE)
            await tx.rollback()
        finally:
            await holder.close()
        assert reply["status"] == "error"
        assert "数据库处理超时" in reply["message"] and "没有做任何修改" in reply["message"]
        memories = await mem.pool.fetch("SELECT id, content FROM amrita_memory.memory")
        assert [(r["id"], r["content"]) for r in memories] == [(first["memory_id"], "原来的内容")]
        memo = await call(mem, "read_memo", {}, ALICE)
        assert memo["memo"] == "原来的备忘"


# ---------------------------------------------------------------------------- a stall


def _server_processes(pgdata: Path) -> list[psutil.Process]:
    pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    postmaster = psutil.Process(pid)
    return [postmaster, *postmaster.children(recursive=True)]


@asynccontextmanager
async def dedicated_memory(data_dir: Path, **overrides: Any) -> AsyncIterator[Memory]:
    """A store on its own embedded server (started here, stopped on close): safe to stall."""
    async with open_memory(
        data_dir=str(data_dir), embedding__protocol="hash", startup=False, **overrides
    ) as mem:
        yield mem


@pytest.mark.slow
async def test_a_stalled_server_never_reports_a_committed_write_as_failed(tmp_path: Path) -> None:
    """Every process of the server is stopped (SIGSTOP) for longer than the client waits.

    Writes already sent hang, the client gives up (command_timeout) and asks for a cancel
    the server cannot read; after SIGCONT those statements run and commit. Before the fix
    they were reported as «写入记忆失败: » — the F7 duplicates. Now: every reply reported as
    «nothing changed» is absent, every success is present exactly once, every other reply
    says «结果未知» — and retrying those identical writes never makes a second row.
    """
    # The stall must catch writes on the wire; when timing let none be (every failed write
    # was still queued for a connection: «nothing changed»), run it again — every run must
    # hold all the invariants below, and at least one must show the «unknown» outcome.
    for attempt in range(3):
        if await _stall_once(tmp_path / f"stall{attempt}"):
            return
    raise AssertionError("writes in flight during the stall have an unknown outcome")


async def _stall_once(path: Path) -> int:
    """One stall; the invariants asserted; how many replies said «结果未知»."""
    async with dedicated_memory(
        path,
        database__statement_timeout=1,
        database__lock_timeout=0.5,
        database__command_timeout=2.5,
        database__connect_timeout=2,
    ) as mem:
        assert mem.database.target.embedded is not None
        pgdata = mem.database.target.embedded.pgdata
        replies: list[tuple[float, str, ToolContext, dict[str, Any]]] = []
        stop_at = time.monotonic() + 9
        resumed_at: list[float] = []

        async def user(i: int) -> None:
            ctx = ToolContext(platform="qq", user_id=str(30000 + i))
            n = 0
            while time.monotonic() < stop_at:
                n += 1
                content = f"用户{i}的第{n}条"
                started = time.monotonic()
                replies.append((started, content, ctx, await write(mem, content, ctx)))
                await asyncio.sleep(0.05)

        async def stall() -> None:
            await asyncio.sleep(1.5)
            stopped = _server_processes(pgdata)
            for proc in stopped:
                proc.send_signal(signal.SIGSTOP)
            try:
                await asyncio.sleep(4.0)  # > command_timeout, > connect_timeout
            finally:
                for proc in stopped:
                    proc.send_signal(signal.SIGCONT)
                resumed_at.append(time.monotonic())

        await asyncio.gather(stall(), *(user(i) for i in range(12)))
        await asyncio.sleep(0.5)

        succeeded = [(c, r) for _, c, _, r in replies if r["status"] == "success"]
        errors = [(c, ctx, r) for _, c, ctx, r in replies if r["status"] != "success"]
        assert errors, "the stall must have failed some writes"
        assert len(succeeded) > 20
        refused = [(c, r) for c, _, r in errors if "没有做任何修改" in r["message"]]
        unknown = [(c, ctx, r) for c, ctx, r in errors if "结果未知" in r["message"]]
        assert len(refused) + len(unknown) == len(errors), [r["message"] for *_, r in errors]
        for _, _, reply in errors:
            assert reply["message"].strip() not in ("写入记忆失败:", "写入记忆失败")
            assert "请" in reply["message"]
        for content, _ in refused:
            assert await rows_with(mem, content) == [], f"refused yet written: {content}"
        for content, reply in succeeded:
            assert await rows_with(mem, content) == [reply["memory_id"]]
        committed_later = 0
        for content, ctx, _ in unknown:
            before = await rows_with(mem, content)
            assert len(before) <= 1
            committed_later += len(before)
            retry = await write(mem, content, ctx)  # what the reply tells the LLM it may do
            assert retry["status"] == "success"
            after = await rows_with(mem, content)
            assert after == [retry["memory_id"]]
            if before:  # committed after all: the retry returned it instead of a duplicate
                assert retry["memory_id"] == before[0] and retry["duplicate_of"] == before[0]
        # Recovery: the first write after SIGCONT succeeds within seconds.
        first_ok = min(
            (t for t, _, _, r in replies if t >= resumed_at[0] and r["status"] == "success"),
            default=None,
        )
        assert first_ok is not None and first_ok - resumed_at[0] < 10
        print(
            f"stall: {len(succeeded)} ok, {len(refused)} refused (all absent), "
            f"{len(unknown)} unknown ({committed_later} of them committed after SIGCONT)"
        )
        return len(unknown)


# ---------------------------------------------------------------------------- connection loss


async def _backend_waiting_for_lock(mem: Memory, holder_pid: int, deadline: float) -> int:
    while time.monotonic() < deadline:
        pid = await mem.pool.fetchval(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> $1 AND pid <> pg_backend_pid() LIMIT 1",
            holder_pid,
        )
        if pid is not None:
            return int(pid)
        await asyncio.sleep(0.02)
    raise AssertionError("the write never waited for the lock")


@pytest.mark.parametrize(
    ("tool", "check"),
    [
        ("write_memory", "read_memory 或 list_memory"),
        ("update_memory", "list_memory 或 read_memory"),
        ("delete_memory", "list_memory"),
        ("append_memo", "read_memo"),
    ],
)
async def test_a_connection_lost_mid_statement_reports_an_unknown_outcome(
    db_dsn: str, tmp_path: Path, tool: str, check: str
) -> None:
    """The backend running the write is terminated (pg_terminate_backend) while the write's
    statement waits for a lock: the reply says the outcome is unknown and how to check —
    never «failed» (F7: the same on connection loss)."""
    async with memory_on(db_dsn, tmp_path) as mem:
        first, args = await _seeded_args(mem, tool)
        holder = await asyncpg.connect(db_dsn)
        try:
            tx = holder.transaction()
            await tx.start()
            if tool == "write_memory":
                await holder.execute(
                    f"SELECT pg_advisory_xact_lock({partition_lock_key(ALICE.personal_key)})"
                )
            elif tool == "append_memo":
                await holder.execute(
                    "SELECT 1 FROM amrita_memory.memo WHERE partition_key = $1 FOR UPDATE",
                    ALICE.personal_key,
                )
            else:
                await holder.execute(
                    "SELECT 1 FROM amrita_memory.memory WHERE id = $1 FOR UPDATE",
                    first["memory_id"],
                )
            pending = asyncio.ensure_future(call(mem, tool, args, ALICE))
            victim = await _backend_waiting_for_lock(
                mem, holder.get_server_pid(), time.monotonic() + 10
            )
            assert await holder.fetchval("SELECT pg_terminate_backend($1)", victim)
            reply = await asyncio.wait_for(pending, 10)
            await tx.rollback()
        finally:
            await holder.close()
        assert reply["status"] == "error"
        message = reply["message"]
        assert "结果未知" in message and "可能已经生效" in message and check in message
        assert "失败" not in message.split("：", 1)[0]
        # It was terminated while waiting, so in fact nothing happened, and the pool
        # carries on with a fresh connection: checking and retrying work.
        contents = [
            r["content"] for r in await mem.pool.fetch("SELECT content FROM amrita_memory.memory")
        ]
        assert contents == ["原来的内容"]
        assert (await call(mem, "read_memo", {}, ALICE))["memo"] == "原来的备忘"
        assert (await call(mem, tool, args, ALICE))["status"] == "success"


# ---------------------------------------------------------------------------- idempotency


async def test_a_retried_identical_write_returns_the_first(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        first = await write(mem, "喜欢猫")
        again = await write(mem, "喜欢猫")
        assert first["status"] == again["status"] == "success"
        assert again["memory_id"] == first["memory_id"] == again["duplicate_of"]
        assert again["created_at"] == first["created_at"] and again["message"]
        assert "duplicate_of" not in first
        assert await rows_with(mem, "喜欢猫") == [first["memory_id"]]
        # Not the same write: another author, another scope, other content.
        others = [
            await write(mem, "喜欢猫", BOB),
            await write(mem, "喜欢猫", ALICE_IN_GROUP, scope="group"),
            await write(mem, "喜欢猫", BOB_IN_GROUP, scope="group"),
            await write(mem, "喜欢狗"),
        ]
        assert all(r["status"] == "success" and "duplicate_of" not in r for r in others)
        assert len({first["memory_id"], *(r["memory_id"] for r in others)}) == 5
        # Alice in a group, scope user: her personal partition again → the same memory.
        personal = await write(mem, "喜欢猫", ALICE_IN_GROUP)
        assert personal["memory_id"] == first["memory_id"]


async def test_concurrent_identical_writes_leave_one_row(db_dsn: str, tmp_path: Path) -> None:
    """The lookup runs under the partition's cap lock, so simultaneous retries of one
    write — the LLM's and the framework's — cannot both insert."""
    async with memory_on(db_dsn, tmp_path) as mem:
        replies = await asyncio.gather(*(write(mem, "同时重试的一条") for _ in range(12)))
        assert all(r["status"] == "success" for r in replies)
        ids = {r["memory_id"] for r in replies}
        assert len(ids) == 1
        assert sum("duplicate_of" not in r for r in replies) == 1
        assert await rows_with(mem, "同时重试的一条") == list(ids)


async def test_the_window_bounds_deduplication(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, write_dedup_seconds=120) as mem:
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        key = ALICE.personal_key
        first = await mem.memories.write(partition_key=key, scope="user", content="x", now=t0)
        inside = await mem.memories.write(
            partition_key=key, scope="user", content="x", now=t0 + timedelta(seconds=119)
        )
        after = await mem.memories.write(
            partition_key=key, scope="user", content="x", now=t0 + timedelta(seconds=121)
        )
        assert inside.duplicate and inside.record.id == first.record.id
        assert not after.duplicate and after.record.id != first.record.id
        # /memory … add and other direct adds are never deduplicated.
        await mem.memories.add(partition_key=key, scope="user", content="x", now=t0)
        assert await mem.memories.count(key) == 3
    async with memory_on(db_dsn, tmp_path, write_dedup_seconds=0) as mem:
        assert (await write(mem, "关掉去重"))["memory_id"] != (await write(mem, "关掉去重"))[
            "memory_id"
        ]


async def test_a_retry_into_a_full_partition_still_returns_the_first(
    db_dsn: str, tmp_path: Path
) -> None:
    """The lookup comes before the cap: the write that filled the partition, retried, is
    a success (it is there), not «full»."""
    async with memory_on(db_dsn, tmp_path, per_session_memory_limit=2) as mem:
        first = await write(mem, "第一条")
        assert (await write(mem, "第二条"))["status"] == "success"
        retry = await write(mem, "第一条")
        assert retry["status"] == "success" and retry["memory_id"] == first["memory_id"]
        full = await write(mem, "第三条")
        assert full["status"] == "error" and "上限" in full["message"]
        assert await mem.memories.count(ALICE.personal_key) == 2
