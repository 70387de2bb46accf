"""The memory's trail as the surfaces use it: log recalls without
ever failing a read, honour paused partitions, read a memory's log and history.

With the pgvector backend a recalling search is ONE statement (``recall_memories_v4``):
the pause check first, the search, the access log (:meth:`recall_log` says what it
writes). With a backend that searches elsewhere (chroma) the recall is logged in one
statement after the search (``recall_v1``), which also says whether the partition is
paused. The
memories injected into a turn are logged in the background (:meth:`log_injected_soon`):
the turn never waits for it, and while one such write is still running the next turn's
is skipped and counted (``dropped``) rather than queued — under load the log thins out,
the chat does not slow down. A failure to log is a warning, never a failed read.

With a read replica (``[database] read_url``) a search runs there, and a hot
standby cannot write: the pause check and the search are one read-only statement on the
replica, and the access log of the hits is written to the primary BEHIND the read
(:meth:`TrailService.log_behind`, an :class:`AccessLogWriter`): queued without waiting,
written by one background task in arrival order. The queue is bounded (``MAX_BEHIND``
entries); a full queue drops the entry and counts it (``behind.dropped``) — the read is
never slowed or failed by its log. Entries still queued when the process dies are lost:
at most ``MAX_BEHIND`` recalls, a gap in the access log, nothing else (the log is a
trail, not a record of truth). A clean close (:meth:`TrailService.flush`) writes them,
waiting ``FLUSH_SECONDS`` at most (a primary that does not answer drops the rest, counted).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from amrita_memory_pg.domain.records import SearchHit
from amrita_memory_pg.domain.trail import AccessEntry, ChangeEntry, Recall, RecallLog, log_query
from amrita_memory_pg.settings import TrailSettings
from amrita_memory_pg.storage.trail import HistoryBounds, PauseState, TrailRepository

log = logging.getLogger(__name__)


#: access-log entries queued behind replica reads at most (the rest are dropped, counted)
MAX_BEHIND = 1000
#: how long a close waits for the queued entries to be written (seconds)
FLUSH_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class BehindEntry:
    """One recall to log on the primary: the hits of one search of one partition."""

    partition_key: str
    ids: tuple[str, ...]
    scores: tuple[float | None, ...]
    at: datetime
    recall: Recall
    query_text: str | None


class AccessLogWriter:
    """Writes access-log entries to the primary behind the reads (see the module):
    :meth:`put` never waits, one task writes, a full queue drops."""

    def __init__(self, repo: TrailRepository, keep: int, max_entries: int = MAX_BEHIND) -> None:
        self.repo = repo
        self.keep = keep
        self._queue: asyncio.Queue[BehindEntry] = asyncio.Queue(max_entries)
        self._task: asyncio.Task[None] | None = None
        #: entries dropped because the queue was full
        self.dropped = 0
        #: entries whose write failed (each a warning)
        self.failed = 0
        #: entries written
        self.written = 0

    def put(self, entry: BehindEntry) -> None:
        try:
            self._queue.put_nowait(entry)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 100 == 0:
                log.warning(
                    "the access log behind replica reads is full: %d recalls not logged",
                    self.dropped,
                )
            return
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._drain(), name="amrita-memory-access-log"
            )

    async def _drain(self) -> None:
        while not self._queue.empty():
            entry = self._queue.get_nowait()
            try:
                await self.repo.log_access(
                    [entry.partition_key] * len(entry.ids),
                    entry.ids,
                    entry.scores,
                    at=entry.at,
                    recall=entry.recall,
                    query_text=entry.query_text,
                    keep=self.keep,
                )
                self.written += 1
            except Exception as exc:  # the trail must never fail a read (nor its writer)
                self.failed += 1
                log.warning(
                    "logging the recall of %s on the primary failed: %s", entry.partition_key, exc
                )
            finally:
                self._queue.task_done()

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    async def flush(self, within: float = FLUSH_SECONDS) -> None:
        """Wait until every queued entry is written (or failed), at most ``within``
        seconds (close, tests): a primary that does not answer must not hold a shutdown;
        what is left then is dropped, counted and said."""
        try:
            await asyncio.wait_for(self._flush(), within)
        except TimeoutError:
            left = self._queue.qsize()
            while not self._queue.empty():
                self._queue.get_nowait()
                self._queue.task_done()
            self.dropped += left
            log.warning("the access log behind replica reads: %d recalls not logged", left)

    async def _flush(self) -> None:
        task = self._task
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
        if not self._queue.empty():  # queued after the task finished: drain here
            await self._drain()


def history_bounds(settings: TrailSettings) -> HistoryBounds:
    """The ``[trail]`` history bounds as the repository hands them to the trigger."""
    return HistoryBounds(settings.history_per_memory, settings.history_keep_deleted_days)


class TrailService:
    """Access log, change history and pause on one :class:`TrailRepository`."""

    def __init__(self, repo: TrailRepository, settings: TrailSettings) -> None:
        self.repo = repo
        self.settings = settings
        self._pending: asyncio.Task[int] | None = None
        #: injected-memory logs skipped because the previous one was still being written
        self.dropped = 0
        #: the access log of searches that ran on a replica, written to the primary
        self.behind = AccessLogWriter(repo, settings.access_per_memory)

    def log_injected_soon(
        self,
        memories: Sequence[tuple[str, str, str]],
        recall: Recall,
        *,
        query: str | None = None,
    ) -> None:
        """:meth:`log_injected` in the background (at most one at a time; see the module)."""
        if not memories or not (self.settings.access_log and self.settings.log_injection):
            return
        if self._pending is not None and not self._pending.done():
            self.dropped += 1
            return
        self._pending = asyncio.get_running_loop().create_task(
            self.log_injected(list(memories), recall, query=query, now=datetime.now(UTC))
        )

    async def flush(self) -> None:
        """Wait for the background log writes (close, tests): the injected memories' and
        the recalls queued behind replica reads."""
        pending, self._pending = self._pending, None
        if pending is not None:
            await pending
        await self.behind.flush()

    def log_behind(
        self,
        partition_key: str,
        hits: Sequence[SearchHit],
        recall: Recall,
        query: str | None,
        *,
        now: datetime,
    ) -> None:
        """Queue the access log of a search that ran on a replica (never waits)."""
        if not (self.settings.access_log and hits):
            return
        self.behind.put(
            BehindEntry(
                partition_key,
                tuple(h.record.id for h in hits),
                tuple(h.decay_score for h in hits),
                now,
                recall,
                log_query(query),
            )
        )

    def recall_log(self, recall: Recall, query: str | None) -> RecallLog:
        """What a search by ``recall`` for ``query`` writes to the access log."""
        return RecallLog(
            recall,
            log_query(query),
            keep=self.settings.access_per_memory,
            log=self.settings.access_log,
        )

    def recall_failed(self, partition_key: str, error: str) -> None:
        """The access log of a read failed (the read itself stands): a warning."""
        log.warning("logging the recall of %s failed: %s", partition_key, error)

    async def after_search(
        self,
        partition_key: str,
        hits: Sequence[SearchHit],
        recall: Recall,
        query: str | None,
        *,
        now: datetime | None = None,
    ) -> bool:
        """Log the hits of a search of one partition; True when it was paused meanwhile
        (the caller withholds the hits). A failure here logs a warning and counts as not
        paused: the pause was already checked, before the search, by a check that raises."""
        try:
            return await self.repo.recall(
                partition_key,
                [h.record.id for h in hits],
                [h.decay_score for h in hits],
                at=now or datetime.now(UTC),
                recall=recall,
                query_text=log_query(query),
                keep=self.settings.access_per_memory,
                log=self.settings.access_log,
            )
        except Exception as exc:  # the trail must never fail a read
            self.recall_failed(partition_key, str(exc))
            return False

    async def log_injected(
        self,
        memories: Iterable[tuple[str, str, str]],
        recall: Recall,
        *,
        query: str | None = None,
        now: datetime | None = None,
    ) -> int:
        """Log (partition, id, surface) triples injected into one turn; never raises."""
        if not (self.settings.access_log and self.settings.log_injection):
            return 0
        written = 0
        by_surface: dict[str, list[tuple[str, str]]] = {}
        for partition, memory_id, surface in memories:
            by_surface.setdefault(surface, []).append((partition, memory_id))
        at = now or datetime.now(UTC)
        for surface, pairs in by_surface.items():
            try:
                written += await self.repo.log_access(
                    [p for p, _ in pairs],
                    [i for _, i in pairs],
                    None,
                    at=at,
                    recall=Recall(surface, recall.chat_key, recall.who),  # type: ignore[arg-type]
                    query_text=log_query(query) if surface == "relevant" else None,
                    keep=self.settings.access_per_memory,
                )
            except Exception as exc:  # the trail must never fail a turn
                log.warning("logging the injected memories failed: %s", exc)
        return written

    async def paused_among(self, keys: Sequence[str]) -> frozenset[str]:
        return await self.repo.paused_among(keys)

    async def is_paused(self, partition_key: str) -> bool:
        return partition_key in await self.repo.paused_among([partition_key])

    async def pause(
        self, partition_key: str, *, by: str, reason: str | None = None, now: datetime | None = None
    ) -> bool:
        """Pause a partition's memory (False: it already was)."""
        return await self.repo.pause(
            partition_key, by=by, at=now or datetime.now(UTC), reason=reason
        )

    async def resume(self, partition_key: str) -> bool:
        """Resume a partition's memory (False: it was not paused)."""
        return await self.repo.resume(partition_key)

    async def state(self, partition_key: str) -> PauseState | None:
        return await self.repo.state(partition_key)

    async def paused(self) -> list[PauseState]:
        return await self.repo.paused()

    async def access_log(
        self, partition_key: str, memory_id: str, limit: int = 50
    ) -> list[AccessEntry]:
        return await self.repo.access_log(partition_key, memory_id, limit)

    async def history(
        self, partition_key: str, memory_id: str, limit: int = 50
    ) -> list[ChangeEntry]:
        return await self.repo.history(partition_key, memory_id, limit)
