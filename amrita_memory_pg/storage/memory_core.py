"""The parts every group of :class:`~amrita_memory_pg.storage.memories.MemoryRepository`
methods shares: the pool, the vector backend kept in step, the cap, and the connection
a write runs on (under the index's write gate)."""

from __future__ import annotations

import contextlib

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from amrita_memory_pg.domain.ports import VectorBackend
from amrita_memory_pg.storage.memory_rows import hold_index_gate
from amrita_memory_pg.storage.pg.outcome import write_connection
from amrita_memory_pg.storage.reads import ReadRoute
from amrita_memory_pg.storage.trail import DEFAULT_BOUNDS, HistoryBounds


class RepositoryCore:
    """L2 memories on one pool, with one vector backend kept in step."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        backend: VectorBackend,
        *,
        cap: int,
        acquire_timeout: float | None = None,
        history: HistoryBounds = DEFAULT_BOUNDS,
        route: ReadRoute | None = None,
    ) -> None:
        self.pool = pool
        #: which pool a search or a list reads (the replica unless it must see this
        #: process's own write; ``storage/reads.py``); every write marks its partition
        self.route = route if route is not None else ReadRoute(pool)
        #: the change history's bounds, handed to its trigger with the writer
        self.history = history
        self.backend = backend
        #: ``per_session_memory_limit``: checked by the insert itself
        self.cap = cap
        #: longest wait for a pooled connection before a write is refused (None = no limit)
        self.acquire_timeout = acquire_timeout

    def _writing(
        self, partition_key: str | None = None
    ) -> contextlib.AbstractAsyncContextManager[PoolConnectionProxy]:
        """A connection for one write whose driver failures come out as
        :class:`DatabaseRefused` (certainly no effect) or :class:`OutcomeUnknown`
        (a write reported as failed must not commit later). ``partition_key``: the
        partition written, whose reads then go to the primary for a while
        (:class:`ReadRoute`)."""
        if partition_key is not None:
            self.route.wrote(partition_key)
        return write_connection(self.pool, acquire_timeout=self.acquire_timeout)

    async def _gate(self, conn: PoolConnectionProxy) -> None:
        await hold_index_gate(conn, self.backend)
