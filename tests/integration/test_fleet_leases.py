"""Several processes on one database: leases in PostgreSQL decide who runs an L3
cycle, a sweep, an extraction. Real processes (the CLI) and separate pools on one
database, a slow scripted model over real HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from amrita_memory_pg.domain.errors import LeaseHeld
from amrita_memory_pg.services.leases import Leases, process_owner
from amrita_memory_pg.storage.leases import LeaseRepository
from amrita_memory_pg.testing_llm import ScriptedLLM
from tests.support.cli import COMMAND, REPO, clean_env, run_cli
from tests.support.l3 import TARGET, USAGE, loop_memory

T0 = datetime(2026, 12, 4, 6, 0, tzinfo=UTC)


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


async def _count(dsn: str, sql: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(sql))
    finally:
        await conn.close()


async def test_a_live_lease_is_refused_with_its_owner_and_an_expired_one_is_taken_over(
    db_dsn: str,
) -> None:
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
    try:
        store = LeaseRepository(pool)
        first = await store.acquire("l3", TARGET, "a:1:x", "tok-a", 60, T0)
        assert first.acquired and first.previous_owner is None
        assert first.expires_at == T0 + timedelta(seconds=60)
        other = await store.acquire("l3", TARGET, "b:2:y", "tok-b", 60, T0 + timedelta(seconds=30))
        assert not other.acquired
        assert (other.owner, other.token) == ("a:1:x", "tok-a")
        # another key is free; the heartbeat pushes the expiry; a stale token cannot renew
        assert (await store.acquire("l3", "QQPlatform_Group_1", "b:2:y", "t", 60, T0)).acquired
        assert await store.renew("l3", TARGET, "tok-a", 60, T0 + timedelta(seconds=50))
        assert not await store.renew("l3", TARGET, "tok-b", 60, T0 + timedelta(seconds=50))
        late = await store.acquire("l3", TARGET, "b:2:y", "tok-b", 60, T0 + timedelta(seconds=100))
        assert not late.acquired  # renewed at +50 s: held until +110 s
        # a's process died: no heartbeat after +50 s, so at +111 s b takes it over
        taken = await store.acquire("l3", TARGET, "b:2:y", "tok-b", 60, T0 + timedelta(seconds=111))
        assert taken.acquired and taken.previous_owner == "a:1:x"
        # the dead owner's late release or heartbeat does not drop the new holder's lease
        assert not await store.release("l3", TARGET, "tok-a")
        assert not await store.renew("l3", TARGET, "tok-a", 60, T0 + timedelta(seconds=112))
        rows = await store.list(T0 + timedelta(seconds=112))
        held = next(r for r in rows if r["lease_key"] == TARGET)
        assert (held["owner"], held["previous_owner"], held["live"]) == ("b:2:y", "a:1:x", True)
        assert await store.release("l3", TARGET, "tok-b")
        assert (await store.acquire("l3", TARGET, "c:3:z", "tok-c", 60, T0)).acquired
        with pytest.raises(asyncpg.InvalidParameterValueError):
            await store.acquire("sweep", "", "c:3:z", "t", 0, T0)
    finally:
        await pool.close()


async def test_hold_is_reentrant_in_one_call_chain_and_exclusive_between_tasks(
    db_dsn: str,
) -> None:
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=4)
    try:
        leases = Leases(LeaseRepository(pool), ttl_seconds=30)
        assert leases.owner == process_owner()
        assert leases.owner.startswith(f"{socket.gethostname()}:{os.getpid()}:")
        entered = asyncio.Event()
        leave = asyncio.Event()

        async def holder() -> None:
            async with leases.hold("sweep") as lease:
                assert lease is not None
                async with leases.hold("sweep") as again:  # the same chain: no second claim
                    assert again is None
                entered.set()
                await leave.wait()

        task = asyncio.create_task(holder())
        await entered.wait()
        with pytest.raises(LeaseHeld) as refused:
            async with leases.hold("sweep"):
                pytest.fail("a second task of the process got the lease")
        assert refused.value.owner == leases.owner
        assert f"held by {leases.owner}" in str(refused.value)
        leave.set()
        await task
        assert await pool.fetchval("SELECT count(*) FROM amrita_memory.lease") == 0
        async with leases.hold("sweep"):  # released: free again
            pass
    finally:
        await pool.close()


async def test_the_heartbeat_keeps_a_lease_past_its_ttl(db_dsn: str) -> None:
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=4)
    try:
        one = Leases(LeaseRepository(pool), ttl_seconds=1, owner="one:1:x")
        two = Leases(LeaseRepository(pool), ttl_seconds=1, owner="two:2:y")
        async with one.hold("reembed") as lease:
            await asyncio.sleep(2.5)  # 2.5 TTLs: only the heartbeat keeps it
            with pytest.raises(LeaseHeld) as refused:
                async with two.hold("reembed"):
                    pytest.fail("taken over while its holder was alive")
            assert refused.value.owner == "one:1:x"
            assert lease is not None and not lease.lost
    finally:
        await pool.close()


def _env(dsn: str, tmp: Path, llm: ScriptedLLM, **extra: str) -> dict[str, str]:
    return clean_env(
        {
            "DATABASE_URL": dsn,
            "AMRITA_MEMORY_DATA_DIR": str(tmp / "data"),
            "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
            "AMRITA_MEMORY_SUBCONSCIOUS__PROMPT_DIR": str(tmp / "config"),
            "LLM_BASE_URL": llm.base_url,
            "LLM_MODEL": "stub",
            **extra,
        }
    )


def _consolidate(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*COMMAND, "consolidate", "--target", TARGET],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_two_concurrent_consolidate_of_one_target_run_one_cycle_and_name_the_holder(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    llm.delay_seconds = 6.0  # the winner sits in its model call while the other claims
    llm.call("subconscious_iter_stop", {"summary": "只整理一次"})
    llm.call("subconscious_iter_stop", {"summary": "第二次（不该发生）"})
    env = _env(db_dsn, tmp_path, llm)
    procs = [_consolidate(env), _consolidate(env)]
    results = []
    for proc in procs:
        out, err = await asyncio.to_thread(proc.communicate, timeout=120)
        results.append((proc.pid, proc.returncode, out, err))
    codes = sorted(code for _pid, code, _o, _e in results)
    assert codes == [0, 3], results
    winner = next(r for r in results if r[1] == 0)
    loser = next(r for r in results if r[1] == 3)
    assert "summary: 只整理一次" in winner[2]
    assert (
        f"a cycle of {TARGET} is already running elsewhere: held by "
        f"{socket.gethostname()}:{winner[0]}:"
    ) in loser[3]
    assert loser[2] == ""
    assert len(llm.requests) == 1  # the model was called by one process, once
    assert await _count(db_dsn, "SELECT count(*) FROM amrita_memory.consolidation_cycle") == 1
    assert await _count(db_dsn, "SELECT runs FROM amrita_memory.l3_state") == 1
    assert await _count(db_dsn, "SELECT count(*) FROM amrita_memory.lease") == 0


async def test_a_killed_holders_target_is_taken_over_at_once_and_the_log_says_it_was_killed(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    llm.delay_seconds = 8.0
    llm.call("subconscious_iter_stop", {"summary": "被杀掉的那次"})
    # a 60 s lease: the next process on this host sees the holder's pid gone and takes
    # the target over at once, without waiting for the expiry
    env = _env(db_dsn, tmp_path, llm, AMRITA_MEMORY_DATABASE__LEASE_SECONDS="60")
    doomed = _consolidate(env)
    try:
        deadline = time.monotonic() + 60
        while not llm.requests:  # it holds the lease and waits for the model
            assert doomed.poll() is None, doomed.communicate()
            assert time.monotonic() < deadline, "the first cycle never called the model"
            await asyncio.sleep(0.1)
        dead_owner = f"{socket.gethostname()}:{doomed.pid}:"
        pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
        try:
            probe = LeaseRepository(pool)
            seen = await probe.acquire("l3", TARGET, "probe:0:x", "probe", 60)
            assert not seen.acquired and seen.owner.startswith(dead_owner)
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(30)
            # dead: its row stays, live for most of a minute, as nobody renews it any more
            rows = await probe.list()
            assert [r["owner"][: len(dead_owner)] for r in rows] == [dead_owner]
            assert rows[0]["live"]
        finally:
            await pool.close()
    finally:
        if doomed.poll() is None:
            doomed.kill()
        doomed.communicate()
    llm.delay_seconds = 0.0
    llm.script.clear()
    llm.call("subconscious_iter_stop", {"summary": "接手了"})
    started = time.monotonic()
    heir = _consolidate(env)
    out, err = await asyncio.to_thread(heir.communicate, timeout=120)
    assert time.monotonic() - started < 50  # not after the dead lease's expiry
    assert heir.returncode == 0, (out, err)
    assert "summary: 接手了" in out
    assert f"taken over from {dead_owner}" in err
    # its lease had not expired: the line says what happened (the holder is gone)
    assert "no longer running" in err and "whose lease expired" not in err
    assert (
        await _count(
            db_dsn, "SELECT count(*) FROM amrita_memory.consolidation_cycle WHERE ok IS TRUE"
        )
        == 1
    )
    assert await _count(db_dsn, "SELECT count(*) FROM amrita_memory.lease") == 0


async def test_two_bot_processes_scheduling_one_target_run_one_cycle_the_other_plans_later(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    """Two Memory instances (two pools, as two bot processes) fire the same target's
    scheduled job at once: one runs the cycle, the other logs the holder and plans its
    next window without touching the stored state."""
    llm.delay_seconds = 2.0
    llm.call("subconscious_iter_stop", {"summary": "一次"})
    llm.call("subconscious_iter_stop", {"summary": "两次（不该发生）"})
    async with (
        loop_memory(db_dsn, tmp_path / "a", llm) as one,
        loop_memory(db_dsn, tmp_path / "b", llm) as two,
    ):
        one.leases.owner = "bot-a:101:x"
        two.leases.owner = "bot-b:202:y"
        (s1, r1), (s2, r2) = await asyncio.gather(
            one.scheduling.run_cycle(TARGET), two.scheduling.run_cycle(TARGET)
        )
        done, held = (s1, s2) if s1.held_by is None else (s2, s1)
        run_held = r2 if held is s2 else r1
        assert done.ok and done.summary == "一次", done
        assert held.held_by in ("bot-a:101:x", "bot-b:202:y") and not held.ok
        assert held.error == f"held by {held.held_by}" and held.cycle_id == 0
        assert run_held is not None and run_held.decision.reason == "held_elsewhere"
        assert run_held.run_at > datetime.now(UTC)
        assert len(llm.requests) == 1
        state = await one.scheduling.state(TARGET)
        assert state is not None and state.runs == 1
        assert await one.pool.fetchval("SELECT count(*) FROM amrita_memory.lease") == 0


async def test_the_sweep_and_the_session_job_run_in_one_process_of_the_fleet(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with (
        loop_memory(db_dsn, tmp_path / "a", llm, extraction__enabled=True) as one,
        loop_memory(db_dsn, tmp_path / "b", llm, extraction__enabled=True) as two,
    ):
        two.leases.owner = "bot-b:202:y"
        async with two.leases.hold("sweep"):
            assert await one.scheduled_sweep() is None  # held by b: skipped
        report = await one.scheduled_sweep()
        assert report is not None
        async with two.leases.hold("extraction", "expiry"):
            assert await one.extractor.run_expired() == []
        assert one.extractor.model is not None
        async with two.leases.hold("extraction", "QQPlatform_Group_9"):
            outcome = await one.extractor.extract("QQPlatform_Group_9")
        assert (outcome.status, outcome.reason) == ("held", "held by bot-b:202:y")
        assert llm.requests == []  # nothing was extracted, no model call


async def test_cli_backup_and_sweep_refuse_while_another_process_holds_their_lease(
    db_dsn: str, tmp_path: Path
) -> None:
    env = {
        "DATABASE_URL": db_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
    }
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
    try:
        store = LeaseRepository(pool)
        for kind in ("backup", "sweep"):
            assert (await store.acquire(kind, "", "bot-b:202:y", f"t-{kind}", 60)).acquired
        backup = run_cli("backup", "create", env=env)
        assert backup.returncode == 2
        assert "backup is held by bot-b:202:y" in backup.stderr
        assert not list((tmp_path / "data").rglob("*.jsonl"))  # nothing was exported
        sweep = run_cli("sweep", "--force", env=env)
        assert sweep.returncode == 2 and "sweep is held by bot-b:202:y" in sweep.stderr
        assert await store.release("sweep", "", "t-sweep")
        swept = run_cli("sweep", "--force", env=env)
        assert swept.returncode == 0, swept.stderr
        assert swept.stdout.startswith("scanned 0")
    finally:
        await pool.close()


async def test_a_second_reindex_says_who_holds_the_re_embed_and_embeds_nothing(
    db_dsn: str, tmp_path: Path
) -> None:
    """Two `reindex` runs at once no longer fight; the second names the
    holder, exits 2 and neither stages nor embeds a row."""
    env = {
        "DATABASE_URL": db_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
    }
    added = run_cli("memory", "add", "QQPlatform_Private_10001", "我喜欢猫", env=env)
    assert added.returncode == 0, added.stderr
    pool = await asyncpg.create_pool(db_dsn, min_size=1, max_size=2)
    try:
        store = LeaseRepository(pool)
        assert (await store.acquire("reembed", "", "bot-a:101:x", "t-reembed", 60)).acquired
        second = run_cli("reindex", "--yes", env=env)
        assert second.returncode == 2, second.stdout + second.stderr
        assert "reembed is held by bot-a:101:x" in second.stderr
        assert await pool.fetchval("SELECT count(*) FROM amrita_memory.reembed_staging") == 0
        assert await store.release("reembed", "", "t-reembed")
        third = run_cli("reindex", "--yes", env=env)
        assert third.returncode == 0, third.stderr
    finally:
        await pool.close()
