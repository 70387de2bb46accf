"""The job runner on its own: refusals, failures in the record, cancellation, history bound."""

from __future__ import annotations

import asyncio

import pytest

from amrita_memory_pg.domain.errors import JobRefused
from amrita_memory_pg.web.jobs import Job, JobRunner


async def test_unknown_kind_is_refused_and_other_kinds_run_side_by_side() -> None:
    gate = asyncio.Event()

    async def slow(job: Job) -> str:
        job.update("waiting", 1, 4)
        await gate.wait()
        return "ok"

    runner = JobRunner({"a": slow, "b": slow})
    with pytest.raises(JobRefused, match="unknown job kind 'c'"):
        await runner.start("c", by="x")
    a = await runner.start("a", by="x")
    b = await runner.start("b", by="x")  # another kind: not refused
    await asyncio.sleep(0)
    assert (a.phase, a.percent, runner.running("a")) == ("waiting", 25, a)
    gate.set()
    assert (await runner.wait(a.id)).result == "ok"
    assert (await runner.wait(b.id)).state == "done"
    assert a.percent == 100 and runner.running("a") is None


async def test_an_exception_becomes_a_redacted_error_and_cancel_marks_failed() -> None:
    async def boom(job: Job) -> str:
        raise RuntimeError("cannot reach https://user:hunter22@example.org/v1")

    async def forever(job: Job) -> str:
        await asyncio.Event().wait()
        return "never"

    runner = JobRunner({"boom": boom, "forever": forever})
    failed = await runner.wait((await runner.start("boom", by="x")).id)
    assert failed.state == "failed"
    assert failed.error is not None and "hunter22" not in failed.error
    assert "cannot reach" in failed.error
    hanging = await runner.start("forever", by="x")
    await asyncio.sleep(0)
    await runner.aclose()
    assert (hanging.state, hanging.error) == ("failed", "cancelled (the server stopped)")


async def test_only_the_newest_finished_jobs_are_kept() -> None:
    async def quick(job: Job) -> str:
        return "ok"

    runner = JobRunner({"q": quick}, keep=3)
    ids = []
    for _ in range(6):
        job = await runner.start("q", by="x")
        await runner.wait(job.id)
        ids.append(job.id)
    kept = [j.id for j in runner.jobs()]
    # trimming happens on each start: the newest 3 finished plus the one just started
    assert kept[:3] == ids[::-1][:3] and len(kept) <= 4
    assert runner.get(ids[0]) is None
    with pytest.raises(JobRefused):
        await runner.wait(ids[0])


async def test_the_end_of_every_job_is_told_and_a_failing_listener_changes_nothing() -> None:
    told: list[tuple[str, str]] = []

    async def listener(job: Job) -> None:
        told.append((job.kind, job.state))
        if job.kind == "bad":
            raise RuntimeError("the audit table is gone")

    async def ok(job: Job) -> str:
        return "ok"

    async def bad(job: Job) -> str:
        raise ValueError("nope")

    runner = JobRunner({"ok": ok, "bad": bad}, on_finish=listener)
    first = await runner.wait((await runner.start("ok", by="x")).id)
    second = await runner.wait((await runner.start("bad", by="x")).id)
    assert told == [("ok", "done"), ("bad", "failed")]
    assert (first.state, second.state, second.error) == ("done", "failed", "nope")
