"""Where a read that may lag goes: the replica (``[database] read_url``) or
the primary.

A streaming replica replays the primary's writes a moment late (its replay lag, usually
well under a second, unbounded when it stalls). Reads that are fine a moment late go
there; a read that must see its caller's own write goes to the primary. Which is which
is decided here, per partition, without a round trip:

* **The L3 loop and extraction read the primary** (the task's actor, set by the tool
  registry and the extraction, is ``l3`` or ``extraction``): a cycle reads, writes,
  merges and reads again within one run, and decides on what it reads.
* **A partition this process wrote within** ``[database] read_own_writes_seconds``
  (default 10) **reads the primary**: every memory and memo write of this process (the chat tool,
  /memory, the page, the CLI) marks its partition first. A write then a read in the same
  turn — or the next turn, or the next tool call of one batch — sees the write, however
  far the replica lags, as long as it is read within the window; after the window the
  partition reads the replica again, which by then has replayed the write unless the
  replica lags more than the window (its lag is what a user sees then).
* Everything else reads the replica.

Used for searches (:class:`~amrita_memory_pg.storage.memories.MemoryRepository`:
``search``, ``recall``), memory lists (``list_page``, ``list_filtered``, the admin
page's list of one partition) and the per-turn block (``BotMemoryRepository.block``:
the primary when any partition it reads was written here within the window; memo writes
mark too); docs/deployment.md has the whole table of what goes where. One route per
process (``Memory.route``), shared by the repositories that write and read.

The marks live in this process only: a write made by ANOTHER process of the fleet is
seen here once the replica replays it (the fleet gives each chat to one process, so a
chat's own writes are this process's). The table of marks is pruned as it grows, so it
stays as large as the partitions written within the window.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import asyncpg

from amrita_memory_pg.domain.trail import current_actor

#: actors whose reads always go to the primary (they decide on what they read)
PRIMARY_ACTORS = frozenset({"l3", "extraction"})
#: prune expired marks once the table holds this many
PRUNE_AT = 4096


class ReadRoute:
    """The pool a partition's lagging-tolerant read uses: :meth:`pool_for`."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        read_pool: asyncpg.Pool | None = None,
        *,
        fresh_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pool = pool
        self.read_pool = read_pool if read_pool is not None else pool
        self.fresh_seconds = fresh_seconds
        self.clock = clock
        self._wrote: dict[str, float] = {}

    @property
    def replicated(self) -> bool:
        """Whether reads may go elsewhere than the primary at all."""
        return self.read_pool is not self.pool

    def wrote(self, partition_key: str) -> None:
        """Mark a partition written by this process now (called before the write: a
        write that then fails only costs the window's reads a trip to the primary)."""
        if not self.replicated:
            return
        now = self.clock()
        self._wrote[partition_key] = now
        if len(self._wrote) > PRUNE_AT:
            horizon = now - self.fresh_seconds
            self._wrote = {k: t for k, t in self._wrote.items() if t >= horizon}

    def on_replica(self, partition_key: str | None) -> bool:
        """Whether a read of ``partition_key`` (None: of no one partition) goes to the
        replica: read the module for the rules."""
        if not self.replicated:
            return False
        actor = current_actor()
        if actor is not None and actor.kind in PRIMARY_ACTORS:
            return False
        if partition_key is None:
            return True
        at = self._wrote.get(partition_key)
        return at is None or self.clock() - at > self.fresh_seconds

    def pool_for(self, partition_key: str | None) -> asyncpg.Pool:
        return self.read_pool if self.on_replica(partition_key) else self.pool
