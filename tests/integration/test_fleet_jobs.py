"""The admin page's jobs as rows: two processes' runners (two Memory instances,
two pools, one database) see each other's jobs, one job per kind runs across the fleet,
a job is cancelled from the other process, a job whose process died shows as lost
and no longer blocks its kind, and a lost re-embed is resumed by the fleet by itself."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from amrita_memory_pg.domain.errors import JobRefused
from amrita_memory_pg.maintenance.reembed import reindex, reindex_state
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.jobs import JobRepository
from amrita_memory_pg.web.jobs import Job, JobRunner, memory_operations
from tests.support.data import bulk_insert
from tests.support.memory import memory_on


async def _until(predicate: Callable[[], bool], within: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_a_job_of_one_process_is_seen_refused_and_cancelled_from_another(
    db_dsn: str, tmp_path: Path
) -> None:
    gate = asyncio.Event()

    async def slow(job: Job) -> str:
        job.update("working", 3, 10)
        await gate.wait()
        return "finished"

    async with (
        memory_on(db_dsn, tmp_path / "a") as one,
        memory_on(db_dsn, tmp_path / "b") as two,
    ):
        one.leases.owner = "bot-a:101:x"
        two.leases.owner = "bot-b:202:y"
        here = JobRunner({"backup": slow}, fleet=one, beat_seconds=0.1)
        there = JobRunner({"backup": slow}, fleet=two, beat_seconds=0.1)
        job = await here.start("backup", by="alice")
        assert job.owner == "bot-a:101:x"
        with pytest.raises(JobRefused, match=r"in process bot-a:101:x"):
            await there.start("backup", by="bob")
        # the other process's page sees the job and its progress (written by the heartbeat)
        await _until(lambda: job.done == 3)
        seen: list[Job] = []

        async def progress_seen() -> bool:
            found = await there.fetch(job.id)
            seen[:] = [found] if found else []
            return bool(found and found.done == 3 and found.total == 10)

        for _ in range(100):
            if await progress_seen():
                break
            await asyncio.sleep(0.05)
        assert seen and (seen[0].state, seen[0].owner, seen[0].percent) == (
            "running",
            "bot-a:101:x",
            30,
        )
        assert [j.id for j in await there.fleet_jobs()] == [job.id]
        # cancelled from the other process: the owner stops it at its next heartbeat
        assert await there.cancel(job.id, by="bob") == "running"
        finished = await asyncio.wait_for(here.wait(job.id), 20)
        assert (finished.state, finished.error) == ("cancelled", "cancelled by bob")
        row = await there.fetch(job.id)
        assert row is not None and (row.state, row.error) == ("cancelled", "cancelled by bob")
        # the kind is free again, in either process
        gate.set()
        again = await there.start("backup", by="bob")
        assert (await there.wait(again.id)).state == "done"
        assert (await here.fetch(again.id)) is not None
        assert (await here.fetch(again.id)).result == "finished"  # type: ignore[union-attr]


async def test_a_job_whose_process_died_shows_as_lost_and_frees_its_kind(
    db_dsn: str, tmp_path: Path
) -> None:
    async def quick(job: Job) -> str:
        return "swept"

    async with memory_on(db_dsn, tmp_path, database__lease_seconds=5) as mem:
        store = JobRepository(mem.pool, stale_seconds=5)
        long_ago = datetime.now(UTC) - timedelta(minutes=10)
        claim = await store.start("deadbeef0001", "sweep", "carol", "gone:9:z", long_ago)
        assert claim.started
        runner = JobRunner({"sweep": quick}, fleet=mem)
        listed = await runner.fleet_jobs()
        assert [(j.id, j.state, j.owner) for j in listed] == [("deadbeef0001", "lost", "gone:9:z")]
        job = await runner.start("sweep", by="alice")  # the dead one no longer blocks
        assert (await runner.wait(job.id)).result == "swept"
        dead = await runner.fetch("deadbeef0001")
        assert dead is not None and dead.state == "lost"
        assert dead.error is not None and "its process gone:9:z stopped" in dead.error


async def test_a_web_sweep_is_refused_while_another_process_sweeps(
    db_dsn: str, tmp_path: Path
) -> None:
    async def sweep(job: Job) -> str:
        return "swept"

    async with (
        memory_on(db_dsn, tmp_path / "a") as one,
        memory_on(db_dsn, tmp_path / "b") as two,
    ):
        two.leases.owner = "bot-b:202:y"
        runner = JobRunner({"sweep": sweep}, fleet=one)
        async with two.leases.hold("sweep"):  # e.g. the scheduler's sweep in bot b
            job = await runner.start("sweep", by="alice")
            finished = await runner.wait(job.id)
        assert finished.state == "failed"
        assert finished.error == "held by bot-b:202:y: a sweep runs there now"
        row = await runner.fetch(job.id)
        assert row is not None


class _Died(Exception):
    """The re-embedding process stops here (as a kill -9 after its first batch)."""


async def _half_done_reembed(mem: Memory, dead_id: str) -> None:
    """45 rows of another model; a re-embed job row of a dead process (heartbeat long
    stopped) that staged its first batch of 10 before dying."""
    await bulk_insert(
        mem.pool, count=45, created_at=datetime.now(UTC), importance=5, fingerprint="old"
    )
    long_ago = datetime.now(UTC) - timedelta(minutes=10)
    claim = await JobRepository(mem.pool, stale_seconds=2).start(
        dead_id, "reembed", "carol", "gone:9:z", long_ago
    )
    assert claim.started

    def die(done: int, total: int) -> None:
        if done:
            raise _Died

    with pytest.raises(_Died):
        await reindex(mem.pool, mem.embedder, batch_size=10, progress=die)
    state = await reindex_state(mem.pool)
    assert state is not None and (state.staged, state.pending) == (10, 35)


async def test_a_reembed_whose_process_died_is_resumed_once_by_the_fleet(
    db_dsn: str, tmp_path: Path
) -> None:
    settings = {"embedding__reembed_batch_size": 10, "database__lease_seconds": 2}
    async with (
        memory_on(db_dsn, tmp_path / "a", **settings) as one,
        memory_on(db_dsn, tmp_path / "b", **settings) as two,
    ):
        one.leases.owner = "bot-a:101:x"
        two.leases.owner = "bot-b:202:y"
        await _half_done_reembed(one, "deadbeef0002")
        here = JobRunner(memory_operations(one), fleet=one)
        there = JobRunner(memory_operations(two), fleet=two)
        # both processes find the lost job at once: one of them resumes it
        found = await asyncio.gather(here.resume_lost(), there.resume_lost())
        resumed = [job for jobs in found for job in jobs]
        assert len(resumed) == 1, found
        job = resumed[0]
        runner = here if job.owner == "bot-a:101:x" else there
        finished = await asyncio.wait_for(runner.wait(job.id), 60)
        assert finished.state == "done", finished.error
        assert finished.started_by == "carol (resumed deadbeef0002)"
        values = json.loads(finished.result or "{}")["values"]
        # the dead run's staged batch was reused: 35 embedded now, 10 resumed
        assert (values["rows"], values["resumed"]) == (45, 10)
        assert await reindex_state(one.pool) is None
        fingerprints = await one.pool.fetch(
            "SELECT DISTINCT embed_fingerprint FROM amrita_memory.memory"
        )
        assert [r[0] for r in fingerprints] == [one.embedder.fingerprint]
        dead = await there.fetch("deadbeef0002")
        assert dead is not None and dead.state == "lost"
        # nothing left to resume: the newest re-embed is done
        assert await here.resume_lost() == [] and await there.resume_lost() == []


async def test_a_watching_runner_resumes_a_lost_reembed_by_itself(
    db_dsn: str, tmp_path: Path
) -> None:
    settings = {"embedding__reembed_batch_size": 10, "database__lease_seconds": 2}
    async with memory_on(db_dsn, tmp_path, **settings) as mem:
        await _half_done_reembed(mem, "deadbeef0003")
        runner = JobRunner(memory_operations(mem), fleet=mem, beat_seconds=0.1)
        runner.watch(0.1)  # what a process serving the page does from its start
        try:
            await _until(lambda: any(not j.running for j in runner.jobs()), within=60)
            (job,) = runner.jobs()
            assert job.state == "done" and job.started_by == "carol (resumed deadbeef0003)"
            assert json.loads(job.result or "{}")["values"]["resumed"] == 10
            await asyncio.sleep(0.3)  # more checks: nothing started again
            assert [j.id for j in runner.jobs()] == [job.id]
        finally:
            await runner.aclose()
        assert await reindex_state(mem.pool) is None
