"""Background jobs of the admin page: backup, decay sweep and re-embed, with progress.

Framework-free: a :class:`JobRunner` starts each job as an asyncio task in the serving
process (the bot's, or ``amrita-memory web``'s). With a memory to work on (``fleet``, what
the admin page passes), every job is also a row of ``amrita_memory.job``
(``sql/functions/job.sql``; the database is what every process of the fleet sees):
started only when no job of its kind runs anywhere in the fleet, its progress and its
process's heartbeat written every ``beat_seconds``, so the page of ANY process lists it,
shows its progress, and can cancel it (a request the owner sees on its next heartbeat); a
job whose process died (no heartbeat for ``[database] lease_seconds``) shows as ``lost``.
The job also holds the fleet's lease of its kind, so a web sweep and the scheduler's sweep
(or a CLI one) never run at once.

Without ``fleet`` (a bare runner in a test) the records live in memory only. A second
start of a running kind is refused (:class:`~amrita_memory_pg.domain.errors.JobRefused`),
never queued. A job that fails is reported in its record (``state = failed``, a redacted
``error``), never raised into the page that polls it.

The operations are the maintenance ones the CLI runs (``backup create``, ``sweep``,
``reindex``) with their progress callbacks; :func:`memory_operations` binds them to an
open :class:`~amrita_memory_pg.memory.Memory`. A re-embed cut short (a restart, a kill)
resumes when started again (its staging is in the database); a backup or sweep simply
runs again.

A re-embed whose process died is resumed without anyone starting it:
:meth:`JobRunner.resume_lost` finds the newest job of a resumable kind ``lost`` (no
heartbeat for ``[database] lease_seconds``) with work left (a re-embed registered and
unfinished, or the store on another model than the configured one) and starts it again
in this process, named after the dead one; the staged vectors are reused. Every process
serving the page, and every bot process without it, checks that every ``lease_seconds``
(:meth:`JobRunner.watch`: at ``amrita-memory web``'s start, the bot's start with its page
mounted, or the plugin runtime's own runner when it is not); when
several find it at once, the job table's one-per-kind claim lets one of them start it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from amrita_memory_pg.domain.errors import AmritaMemoryError, JobRefused, LeaseHeld
from amrita_memory_pg.domain.redact import redact
from amrita_memory_pg.maintenance.backup import create_backup, store_counts
from amrita_memory_pg.maintenance.reembed import change_model, reindex_state
from amrita_memory_pg.maintenance.restore import restore_held
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.leases import LeaseKind
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.jobs import JobRepository
from amrita_memory_pg.web.texts import table_counts

log = logging.getLogger(__name__)

#: the kinds the admin page offers, in the order of its buttons
JOB_KINDS = ("backup", "sweep", "reembed")
#: finished jobs kept readable (running ones are always kept)
KEEP_FINISHED = 20
#: how often a running job writes its progress and heartbeat (seconds)
BEAT_SECONDS = 1.0
#: how often a runner without an open store looks for lost jobs (seconds)
WATCH_SECONDS = 60.0
#: jobs read when looking for a lost one (the table keeps 50 finished + the running)
RESUME_SCAN = 100


async def _reembed_left(mem: Memory) -> bool:
    """A re-embed has work left: one registered and unfinished (staged vectors to reuse),
    or the store on another model than the configured one."""
    if await reindex_state(mem.pool) is not None:
        return True
    recorded = (await store_meta.read(mem.pool)).fingerprint
    return recorded is not None and recorded != mem.embedder.fingerprint


#: the kinds resumed when their process died, each with whether work is left
RESUMABLE: dict[str, Callable[[Memory], Awaitable[bool]]] = {"reembed": _reembed_left}


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class Job:
    """One background job; the operation updates ``phase``/``done``/``total`` as it goes."""

    id: str
    kind: str
    started_by: str
    started_at: datetime
    #: running | done | failed | cancelled | lost (its process died)
    state: str = "running"
    phase: str = "starting"
    done: int = 0
    total: int = 0
    finished_at: datetime | None = None
    #: why it failed (one redacted sentence)
    error: str | None = None
    #: what it did, one line (done jobs)
    result: str | None = None
    #: the process that runs it (``host:pid:start``; None: a runner without a database)
    owner: str | None = None
    heartbeat_at: datetime | None = None
    cancel_requested: bool = False
    cancelled_by: str | None = None

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
            "owner": self.owner,
            "heartbeat_at": self.heartbeat_at.isoformat() if self.heartbeat_at else None,
            "cancel_requested": self.cancel_requested,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Job:
        return cls(
            id=str(row["id"]),
            kind=str(row["kind"]),
            started_by=str(row["started_by"]),
            started_at=row["started_at"],
            state=str(row["state"]),
            phase=str(row["phase"]),
            done=int(row["done"]),
            total=int(row["total"]),
            finished_at=row["finished_at"],
            error=row["error"],
            result=row["result"],
            owner=row["owner"],
            heartbeat_at=row["heartbeat_at"],
            cancel_requested=bool(row["cancel_requested"]),
            cancelled_by=row["cancelled_by"],
        )


#: an operation: does the work, reports through ``job.update``, returns a one-line result
Operation = Callable[[Job], Awaitable[str]]
#: the memory the jobs' rows and leases live in, or what returns it when needed
Fleet = Memory | Callable[[], Memory]


class JobRunner:
    """Starts operations as tasks, one per kind at a time (across the fleet when it has
    a ``fleet`` memory), and keeps their records."""

    def __init__(
        self,
        operations: Mapping[str, Operation],
        *,
        clock: Callable[[], datetime] = _utcnow,
        keep: int = KEEP_FINISHED,
        on_finish: Callable[[Job], Awaitable[None]] | None = None,
        fleet: Fleet | None = None,
        beat_seconds: float = BEAT_SECONDS,
    ) -> None:
        self.operations = dict(operations)
        self.clock = clock
        self.keep = keep
        #: told about every job that ended, done or failed (the page audits the outcome);
        #: its own failure is logged, never raised into the job
        self.on_finish = on_finish
        self.fleet = fleet
        self.beat_seconds = beat_seconds
        self._jobs: dict[str, Job] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._watcher: asyncio.Task[None] | None = None

    def _memory(self) -> Memory | None:
        fleet = self.fleet
        if fleet is None:
            return None
        return fleet if isinstance(fleet, Memory) else fleet()

    @staticmethod
    def _stale(mem: Memory) -> float:
        """No heartbeat for this long: the job's process died."""
        return float(mem.settings.database.lease_seconds)

    @classmethod
    def _rows(cls, mem: Memory) -> JobRepository:
        """The fleet's job rows on ``mem``'s database."""
        return JobRepository(mem.pool, stale_seconds=cls._stale(mem))

    async def start(self, kind: str, *, by: str, operation: Operation | None = None) -> Job:
        """Start a job of ``kind`` now (in the running event loop); refused while one of
        the same kind runs here or, with a ``fleet`` memory, in any process.

        ``operation`` is the work itself when it carries an argument of its own (a
        restore: which backup); else the runner's operation of ``kind``."""
        operation = operation or self.operations.get(kind)
        if operation is None:
            raise JobRefused(f"unknown job kind {kind!r}; known: {', '.join(self.operations)}")
        busy = self.running(kind)
        if busy is not None:
            raise JobRefused(
                f"a {kind} job is already running ({busy.id}, started {busy.started_at:%H:%M:%S} "
                f"UTC by {busy.started_by}); wait for it to finish"
            )
        job = Job(id=secrets.token_hex(6), kind=kind, started_by=by, started_at=self.clock())
        mem = self._memory()
        if mem is not None:
            owner = mem.leases.owner
            claim = await self._rows(mem).start(job.id, kind, by, owner)
            if not claim.started:
                raise JobRefused(
                    f"a {kind} job is already running ({claim.id}, started "
                    f"{claim.started_at:%H:%M:%S} UTC by {claim.started_by} in process "
                    f"{claim.owner}); wait for it to finish"
                )
            job.owner = owner
            job.started_at = claim.started_at
            job.heartbeat_at = claim.started_at
        self._jobs[job.id] = job
        self._tasks[job.id] = asyncio.get_running_loop().create_task(
            self._run(job, operation, mem), name=f"amrita-memory-job-{kind}-{job.id}"
        )
        self._trim()
        return job

    @staticmethod
    async def _holder_work(mem: Memory | None, held: LeaseHeld) -> str:
        """A restore also holds the backup/sweep/re-embed leases: name the restore then."""
        try:
            rows = await mem.leases.repo.list() if mem is not None else []
        except Exception:  # the refusal stands; only its wording is at stake
            return held.kind
        restoring = any(r["owner"] == held.owner and r["kind"] == "restore" for r in rows)
        return "restore" if restoring else held.kind

    async def _run(self, job: Job, operation: Operation, mem: Memory | None) -> None:
        beat: asyncio.Task[None] | None = None
        try:
            if mem is None:
                job.result = await operation(job)
            else:
                me = asyncio.current_task()
                assert me is not None
                beat = asyncio.create_task(self._beat(job, mem, me))
                # the fleet's lease of the work: a sweep the scheduler or a CLI runs
                # elsewhere refuses this one (and the other way round)
                async with mem.leases.hold(cast(LeaseKind, job.kind)):
                    job.result = await operation(job)
        except LeaseHeld as held:
            doing = await self._holder_work(mem, held)
            self._finish(job, "failed", f"held by {held.owner}: a {doing} runs there now")
        except asyncio.CancelledError:
            if job.cancel_requested:
                self._finish(job, "cancelled", f"cancelled by {job.cancelled_by or 'an operator'}")
            else:
                self._finish(job, "failed", "cancelled (the server stopped)")
                await self._record(job, mem, beat)
                self._tasks.pop(job.id, None)
                raise
        except Exception as exc:  # the job's boundary: reported in its record, not raised
            if not isinstance(exc, AmritaMemoryError):
                log.exception("%s job %s failed", job.kind, job.id)
            self._finish(job, "failed", redact(str(exc) or type(exc).__name__))
        else:
            self._finish(job, "done", None)
        await self._record(job, mem, beat)
        self._tasks.pop(job.id, None)
        await self._tell(job)

    async def _beat(self, job: Job, mem: Memory, task: asyncio.Task[Any]) -> None:
        """Write progress and the heartbeat; stop the job when a cancel was requested."""
        store = self._rows(mem)
        assert job.owner is not None
        while True:
            await asyncio.sleep(self.beat_seconds)
            try:
                cancel = await store.beat(job.id, job.owner, job.phase, job.done, job.total)
            except Exception as exc:  # the next beat may get through
                log.warning("%s job %s: heartbeat failed: %s", job.kind, job.id, exc)
                continue
            job.heartbeat_at = self.clock()
            if cancel is None:
                log.error("%s job %s: its row is no longer this process's", job.kind, job.id)
                return
            if cancel and not job.cancel_requested:
                row = await store.get(job.id)
                job.cancel_requested = True
                job.cancelled_by = None if row is None else row["cancelled_by"]
                task.cancel()
                return

    async def _record(self, job: Job, mem: Memory | None, beat: asyncio.Task[None] | None) -> None:
        """Stop the heartbeat and write the job's end to its row."""
        if beat is not None:
            beat.cancel()
            await asyncio.wait([beat])
        if mem is None or job.owner is None:
            return
        try:
            await self._rows(mem).finish(
                job.id,
                job.owner,
                state=job.state,
                phase=job.phase,
                done=job.done,
                total=job.total,
                result=job.result,
                error=job.error,
            )
        except Exception:  # the row shows lost once its heartbeat is stale
            log.exception("recording the end of %s job %s failed", job.kind, job.id)

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
        """A job this process started (None: not one of ours, or long gone)."""
        return self._jobs.get(job_id)

    def jobs(self) -> list[Job]:
        """Every kept job of this process, newest first (start order)."""
        return list(reversed(self._jobs.values()))

    async def fetch(self, job_id: str) -> Job | None:
        """A job of any process of the fleet (this process's own record first: it is
        fresher than its last heartbeat)."""
        own = self._jobs.get(job_id)
        if own is not None:
            return own
        mem = self._memory()
        if mem is None:
            return None
        row = await self._rows(mem).get(job_id)
        return None if row is None else Job.from_row(row)

    async def fleet_jobs(self) -> list[Job]:
        """The newest jobs of every process, this process's own as it knows them."""
        mem = self._memory()
        if mem is None:
            return self.jobs()
        rows = await self._rows(mem).list(self.keep)
        return [self._jobs.get(str(r["id"])) or Job.from_row(r) for r in rows]

    async def cancel(self, job_id: str, *, by: str) -> str | None:
        """Ask the job to stop, wherever it runs; its state (None: no such job). The owner
        stops it at its next heartbeat (this process's own: at once)."""
        own = self._jobs.get(job_id)
        mem = self._memory()
        state = None
        if mem is not None:
            state = await self._rows(mem).cancel(job_id, by)
        if own is not None and own.running:
            own.cancel_requested = True
            own.cancelled_by = by
            task = self._tasks.get(job_id)
            if task is not None:
                task.cancel()
            return "running"
        return state

    async def resume_lost(self) -> list[Job]:
        """Start again, here, each resumable kind whose newest job is lost and has work
        left (see the module); the jobs started. Another process resuming it first, or a
        job of the kind running anywhere, is not an error: nothing starts."""
        mem = self._memory()
        if mem is None:
            return []
        rows = await self._rows(mem).list(RESUME_SCAN)
        started: list[Job] = []
        for kind, work_left in RESUMABLE.items():
            if kind not in self.operations or self.running(kind) is not None:
                continue
            newest = next((r for r in rows if r["kind"] == kind), None)
            if newest is None or newest["state"] != "lost" or not await work_left(mem):
                continue
            try:
                job = await self.start(
                    kind, by=f"{newest['started_by']} (resumed {newest['id']})"[:200]
                )
            except JobRefused:
                continue
            log.warning(
                "%s job %s of process %s died: resumed here as %s",
                kind,
                newest["id"],
                newest["owner"],
                job.id,
            )
            started.append(job)
        return started

    def watch(self, every: float | None = None) -> None:
        """Check for lost resumable jobs now and every ``every`` seconds (default:
        ``[database] lease_seconds``) until :meth:`aclose`; idempotent."""
        if self._watcher is not None and not self._watcher.done():
            return
        self._watcher = asyncio.get_running_loop().create_task(
            self._watch(every), name="amrita-memory-job-watch"
        )

    async def _watch(self, every: float | None) -> None:
        while True:
            try:
                await self.resume_lost()
            except Exception as exc:  # e.g. the bot's store is not open yet: next time
                log.debug("checking for lost jobs failed: %s", exc)
            await asyncio.sleep(every if every is not None else self._watch_seconds())

    def _watch_seconds(self) -> float:
        try:
            mem = self._memory()
        except Exception:  # the bot's store is not open yet
            return WATCH_SECONDS
        return self._stale(mem) if mem is not None else WATCH_SECONDS

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
        if self._watcher is not None:
            tasks.append(self._watcher)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# ---------------------------------------------------------------------------- operations


def result_line(key: str, **values: int | str | dict[str, int]) -> str:
    """A job's result as data (an i18n key and its values, JSON): the row is read by
    every process's page, each showing it in its reader's language."""
    return json.dumps({"key": key, "values": values}, ensure_ascii=False)


def result_text(result: str | None, t: Callable[..., str]) -> str:
    """The result line in ``t``'s language; a plain-text result (older rows, the
    backup's file name) is shown as it is."""
    if not result:
        return ""
    try:
        data = json.loads(result)
    except ValueError:
        return result
    if not isinstance(data, dict) or not isinstance(data.get("key"), str):
        return result
    values = dict(data.get("values") or {})
    if isinstance(values.get("counts"), dict):
        values["counts"] = table_counts(values["counts"], t)
    return str(t(data["key"], **values))


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
        # the counts as data, named per table in the reader's language (texts.table_counts)
        return result_line("job.result.backup", stem=info.stem, counts=dict(info.counts))

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
        return result_line(
            "job.result.sweep",
            scanned=report.scanned,
            demoted=report.demoted,
            purged=report.purged,
            kept=report.kept,
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
        return result_line(
            "job.result.reembed",
            rows=report.embedded + report.resumed,
            resumed=report.resumed,
            memories=report.memories,
            knowledge=report.knowledge,
            dim=report.dim if report.dim is not None else "?",
        )

    return {"backup": backup, "sweep": sweep, "reembed": reembed}


def restore_operation(source: Memory | Callable[[], Memory], path: Path) -> Operation:
    """Restore the backup at ``path`` (the backups page's restore): as
    ``backup restore`` does, a safety backup of the store first, then the file in one
    transaction, while no re-embed, sweep or backup runs anywhere in the fleet. Started with ``JobRunner.start("restore", operation=…)``: the kind's
    one-per-fleet rule and lease hold, like every job's."""

    async def restore(job: Job) -> str:
        mem = source if isinstance(source, Memory) else source()
        job.update("restore")
        try:
            # the CLI's restore path: no re-embed, sweep or backup beside it
            report = await restore_held(mem.store, mem.leases, path)
        except LeaseHeld as held:
            raise AmritaMemoryError(
                f"a {held.kind} runs in process {held.owner}: restore once it has ended"
            ) from None
        safety = report.safety_backup
        return result_line(
            "job.result.restore",
            stem=path.name.split(".")[0],
            memories=report.counts.get("memory", 0),
            safety=safety.stem if safety is not None else "-",
        )

    return restore
