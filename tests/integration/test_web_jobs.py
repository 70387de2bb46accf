"""The admin page's background jobs on a real store: sweep, re-embed and backup run to
completion with progress; one of each kind at a time; a failure is reported, not raised."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from amrita_memory_pg.domain.errors import JobRefused
from amrita_memory_pg.web.i18n import translator
from amrita_memory_pg.web.jobs import Job, JobRunner, memory_operations, result_text
from tests.support.data import bulk_insert
from tests.support.memory import memory_on


async def _watch(runner: JobRunner, job: Job) -> list[tuple[str, int, int]]:
    """Every distinct (phase, done, total) seen while the job runs (polled at each await)."""
    seen: list[tuple[str, int, int]] = []
    while job.running:
        snapshot = (job.phase, job.done, job.total)
        if not seen or seen[-1] != snapshot:
            seen.append(snapshot)
        await asyncio.sleep(0)
    await runner.wait(job.id)
    return seen


async def test_sweep_job_runs_to_completion_with_progress_and_a_second_is_refused(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, decay__sweep_batch_limit=100) as mem:
        old = datetime.now(UTC) - timedelta(days=400)
        await bulk_insert(mem.pool, count=250, created_at=old, importance=2)
        runner = JobRunner(memory_operations(mem))
        job = await runner.start("sweep", by="alice")
        with pytest.raises(JobRefused, match="a sweep job is already running"):
            await runner.start("sweep", by="bob")
        seen = await _watch(runner, job)
        assert job.state == "done", job.error
        assert (job.done, job.total, job.percent) == (250, 250, 100)
        text = result_text(job.result, translator("en"))  # stored as data, read per language
        assert "scanned 250" in text and "purged 250" in text
        # progress moved batch by batch, never past the total
        partial = [done for phase, done, total in seen if phase == "sweep" and 0 < done < total]
        assert partial, seen
        assert all(done <= total for _phase, done, total in seen)
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0
        # finished: the same kind may start again
        again = await runner.start("sweep", by="bob")
        assert (await runner.wait(again.id)).state == "done"
        assert [j.id for j in runner.jobs()] == [again.id, job.id]
        assert runner.get(job.id) is job


async def test_reembed_job_switches_the_model_with_progress_and_takes_a_backup(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, embedding__reembed_batch_size=10) as mem:
        await bulk_insert(
            mem.pool, count=45, created_at=datetime.now(UTC), importance=5, fingerprint="old"
        )
        runner = JobRunner(memory_operations(mem))
        job = await runner.start("reembed", by="alice")
        with pytest.raises(JobRefused, match="reembed job is already running"):
            await runner.start("reembed", by="alice")
        seen = await _watch(runner, job)
        assert job.state == "done", job.error
        assert job.done == job.total == 45
        assert "rows re-embedded: 45" in result_text(job.result, translator("en"))
        phases = [phase for phase, _d, _t in seen]
        assert phases.index("backup") < phases.index("embed")
        assert any(phase == "embed" and 0 < done < total for phase, done, total in seen), seen
        fingerprints = await mem.pool.fetch(
            "SELECT DISTINCT embed_fingerprint FROM amrita_memory.memory"
        )
        assert [r[0] for r in fingerprints] == [mem.embedder.fingerprint]
        assert list((tmp_path / "backups").glob("amrita_memory_*.jsonl"))


async def test_backup_job_reports_export_progress(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await bulk_insert(mem.pool, count=1200, created_at=datetime.now(UTC), importance=5)
        runner = JobRunner(memory_operations(mem))
        job = await runner.start("backup", by="alice")
        seen = await _watch(runner, job)
        assert job.state == "done", job.error
        # the result is data, named per table in the reader's language when shown
        assert job.result is not None
        values = json.loads(job.result)["values"]
        assert values["stem"].startswith("amrita_memory_")
        assert values["counts"]["memory"] == 1200
        shown = result_text(job.result, translator("zh"))
        assert shown.startswith(values["stem"]) and "记忆 1200" in shown
        # a backup is the whole store: the 1200 memories and their 1200 history rows
        history = await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory_change")
        total = 1200 + history
        assert history == 1200
        assert ("export", 500, total) in seen and ("export", 1000, total) in seen
        assert (job.done, job.total, job.percent) == (total, total, 100)
        stem = values["stem"]
        assert (tmp_path / "backups" / f"{stem}.jsonl").is_file()


async def test_a_failing_job_is_reported_in_its_record_not_raised(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        runner = JobRunner(memory_operations(mem))
        job = await runner.start("sweep", by="alice")
        finished = await runner.wait(job.id)
        assert finished.state == "failed"
        assert finished.error is not None and "disabled via config" in finished.error
        assert finished.finished_at is not None and finished.percent is None
        assert finished.as_dict()["state"] == "failed"
