"""Background jobs of the admin page: backup, decay sweep and re-embed, with progress.

Framework-free: a :class:`JobRunner` starts each job as an asyncio task in the serving
process (the bot's, or ``amrita-memory web``'s) and keeps its progress in memory,
readable by id while it runs and after it ends (the newest ``keep`` finished jobs).
One job of each kind at a time: a second start of a running kind is refused
(:class:`~amrita_memory_pg.domain.errors.JobRefused`), never queued. A job that fails
is reported in its record (``state = failed``, a redacted ``error``), never raised into
the page that polls it.

The operations are the maintenance ones the CLI runs (``backup create``, ``sweep``,
``reindex``) with their progress callbacks; :func:`memory_operations` binds them to an
open :class:`~amrita_memory_pg.service.Memory`. Jobs do not outlive the process: a
re-embed cut short by a restart resumes when started again (its staging is in the
database); a backup or sweep simply runs again.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from amrita_memory_pg.domain.errors import AmritaMemoryError, JobRefused
from amrita_memory_pg.domain.redact import redact
from amrita_memory_pg.maintenance.backup import create_backup, store_counts
from amrita_memory_pg.maintenance.reembed import change_model
from amrita_memory_pg.service import Memory

log = logging.getLogger(__name__)

#: the kinds the admin page offers, in the order of its buttons
JOB_KINDS = ("backup", "sweep", "reembed")
#: finished jobs kept readable (running ones are always kept)
KEEP_FINISHED = 20


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class Job:
    """One background job; the operation updates ``phase``/``done``/``total`` as it goes."""

    id: str
    kind: str
    started_by: str
    started_at: datetime
    #: running | done | failed
    state: str = "running"
    phase: str = "starting"
    done: int = 0
    total: int = 0
    finished_at: datetime | None = None
    #: why it failed (one redacted sentence)
    error: str | None = None
    #: what it did, one line (done jobs)
    result: str | None = None

    def update(
        self, phase: str | None = None, done: int | None = None, total: int | None = None
    ) -> None:
        """Progress from the operation (any argument left out keeps its value)."""
        if phase is not None:
            self.phase = phase
        if done is not None:
            self.done = done
        if total is not None:
            self.total = total

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def percent(self) -> int | None:
        """0–100 when the total is known; a finished job is 100."""
        if self.state == "done":
            return 100
        if self.total <= 0:
            return None
        return max(0, min(100, self.done * 100 // self.total))

    def as_dict(self) -> dict[str, Any]:
        """The JSON the progress view polls."""
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "phase": self.phase,
            "done": self.done,
            "total": self.total,
            "percent": self.percent,
            "started_by": self.started_by,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "error": self.error,
            "result": self.result,
        }


#: an operation: does the work, reports through ``job.update``, returns a one-line result
Operation = Callable[[Job], Awaitable[str]]


class JobRunner:
    """Starts operations as tasks, one per kind at a time, and keeps their records."""

    def __init__(
        self,
        operations: Mapping[str, Operation],
        *,
        clock: Callable[[], datetime] = _utcnow,
        keep: int = KEEP_FINISHED,
        on_finish: Callable[[Job], Awaitable[None]] | None = None,
    ) -> None:
        self.operations = dict(operations)
        self.clock = clock
        self.keep = keep
        #: told about every job that ended, done or failed (the page audits the outcome);
        #: its own failure is logged, never raised into the job
        self.on_finish = on_finish
        self._jobs: dict[str, Job] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, kind: str, *, by: str) -> Job:
        """Start a job of ``kind`` now (in the running event loop); refused while one of
        the same kind runs."""
        operation = self.operations.get(kind)
        if operation is None:
            raise JobRefused(f"unknown job kind {kind!r}; known: {', '.join(self.operations)}")
        busy = self.running(kind)
        if busy is not None:
            raise JobRefused(
                f"a {kind} job is already running ({busy.id}, started {busy.started_at:%H:%M:%S} "
                f"UTC by {busy.started_by}); wait for it to finish"
            )
        job = Job(id=secrets.token_hex(6), kind=kind, started_by=by, started_at=self.clock())
        self._jobs[job.id] = job
        self._tasks[job.id] = asyncio.get_running_loop().create_task(
            self._run(job, operation), name=f"amrita-memory-job-{kind}-{job.id}"
        )
        self._trim()
        return job

    async def _run(self, job: Job, operation: Operation) -> None:
        try:
            job.result = await operation(job)
        except asyncio.CancelledError:
            self._finish(job, "failed", "cancelled (the server stopped)")
            raise
        except Exception as exc:  # the job's boundary: reported in its record, not raised
            if not isinstance(exc, AmritaMemoryError):
                log.exception("%s job %s failed", job.kind, job.id)
            self._finish(job, "failed", redact(str(exc) or type(exc).__name__))
        else:
            self._finish(job, "done", None)
        finally:
            self._tasks.pop(job.id, None)
        await self._tell(job)

    async def _tell(self, job: Job) -> None:
        if self.on_finish is None:
            return
        try:
            await self.on_finish(job)
        except Exception:
            log.exception("recording the end of %s job %s failed", job.kind, job.id)

    def _finish(self, job: Job, state: str, error: str | None) -> None:
        job.state = state
        job.error = error
        job.finished_at = self.clock()
        if state == "done":
            job.phase = "done"

    def _trim(self) -> None:
        finished = [j for j in self._jobs.values() if not j.running]
        for old in finished[: max(0, len(finished) - self.keep)]:
            del self._jobs[old.id]

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def jobs(self) -> list[Job]:
        """Every kept job, newest first (start order)."""
        return list(reversed(self._jobs.values()))

    def running(self, kind: str) -> Job | None:
        return next((j for j in self._jobs.values() if j.kind == kind and j.running), None)

    async def wait(self, job_id: str) -> Job:
        """The job once it has finished (tests, a CLI)."""
        task = self._tasks.get(job_id)
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
        job = self._jobs.get(job_id)
        if job is None:
            raise JobRefused(f"no job {job_id}")
        return job

    async def aclose(self) -> None:
        """Cancel what still runs (the server is stopping) and wait for it to end."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# ---------------------------------------------------------------------------- operations


def memory_operations(source: Memory | Callable[[], Memory]) -> dict[str, Operation]:
    """Backup, sweep and re-embed on the memory's store, as the CLI runs them.

    ``source`` is the open memory, or what returns it when a job starts (a page's app
    gets its memory lazily: the bot's store may open after the app was built).
    """

    def current() -> Memory:
        return source if isinstance(source, Memory) else source()

    async def backup(job: Job) -> str:
        mem = current()
        job.update("export")
        info = await create_backup(
            mem.store,
            reason="web",
            progress=lambda phase, done, total: job.update(phase, done, total),
        )
        counts = ", ".join(f"{k} {v}" for k, v in info.counts.items())
        return f"{info.stem} ({counts})"

    async def sweep(job: Job) -> str:
        mem = current()
        decay = mem.settings.decay
        if not (decay.enabled and decay.sweep_enabled):
            raise AmritaMemoryError(
                "the sweep is disabled via config ([decay] enabled / sweep_enabled); "
                "`amrita-memory sweep --force` runs it anyway"
            )
        total = (await store_counts(mem.pool))["memory"]
        job.update("sweep", 0, total)
        report = await mem.memories.sweep(
            progress=lambda scanned: job.update(done=scanned, total=max(total, scanned))
        )
        job.update(done=max(job.done, report.scanned))
        return (
            f"scanned {report.scanned}, demoted {report.demoted}, purged {report.purged}, "
            f"kept {report.kept}"
        )

    async def reembed(job: Job) -> str:
        mem = current()
        job.update("backup")
        report = await change_model(
            mem.store,
            on_backup=lambda _info: job.update("embed"),
            progress=lambda done, total: job.update("embed", done, total),
        )
        job.update("done", report.embedded, max(job.total, report.embedded))
        return (
            f"re-embedded {report.embedded + report.resumed} rows ({report.resumed} resumed): "
            f"{report.memories} memories, {report.knowledge} knowledge entries, dimension {report.dim}"
        )

    return {"backup": backup, "sweep": sweep, "reembed": reembed}
