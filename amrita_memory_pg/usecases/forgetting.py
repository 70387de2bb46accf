"""Deleting with the cascade, forgetting, erasing, and the lineage a person looks at: the
same use cases for every surface (the chat tools, ``/memory``, the CLI, the admin page).

The rules are the SQL's (``sql/functions/lineage.sql``): what was derived from a
deleted or forgotten memory alone is deleted, what was derived from it and other rows
is withheld for the L3 loop to write again without it; a forget also removes every trace
and is recorded in the erasure ledger; an erasure does that for a whole partition.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime

from amrita_memory_pg.domain.lineage import (
    Cascade,
    Confirmation,
    Ref,
    confirm,
    line_ref,
    memory_ref,
    restates,
)
from amrita_memory_pg.domain.records import MemoryRecord
from amrita_memory_pg.services.leases import Leases
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.storage.activity import ActivityRepository
from amrita_memory_pg.storage.lineage import (
    LedgerEntry,
    LineageRepository,
    LineageRow,
    RederiveTask,
)
from amrita_memory_pg.usecases.pause import PauseGate

#: how many of a chat's newest lines a forget asked in that chat looks at for the request
REQUEST_LINES = 20
#: how many memories a forget by text offers to choose from
FORGET_CANDIDATES = 5
#: the tables whose rows an erasure's confirmation code stands for (what the person
#: confirms: the stored facts and what was derived from them)
ERASE_CODE_TABLES = frozenset(
    {"memory", "memo", "profile", "profile_history", "knowledge", "rederive_task"}
)


@dataclass(frozen=True, slots=True)
class Lineage:
    """What a row was made from and what was made from it (nearest first)."""

    made_from: list[LineageRow]
    used_by: list[LineageRow]


class ForgetCases:
    """Cascading deletes, forgets and erasures, and the lineage behind them."""

    def __init__(
        self,
        memories: MemoryService,
        lineage: LineageRepository,
        gate: PauseGate,
        *,
        activity: ActivityRepository | None = None,
        leases: Leases | None = None,
    ) -> None:
        self.memories = memories
        self.lineage = lineage
        self.gate = gate
        #: the chat log, to find a request's own lines (None: not looked for)
        self.activity = activity
        #: the fleet's leases: an erasure waits for no cycle or extraction of its partition
        self.leases = leases

    async def remove(
        self,
        partition_key: str,
        memory_id: str,
        *,
        by_person: bool = False,
        now: datetime | None = None,
    ) -> Cascade | None:
        """Delete one memory with the cascade of what was derived from it (None: the id is
        not in the partition). ``ProtectedMemory`` for a manual memory unless by a person."""
        await self.gate.check(partition_key)
        return await self.memories.delete_cascading(
            partition_key, memory_id, by_person=by_person, now=now
        )

    async def find(self, partition_key: str, text: str) -> list[MemoryRecord]:
        """The memories a forget by text may mean: an id (or its prefix) names one; else
        the best matches of a search (not logged as a recall)."""
        await self.gate.check(partition_key)
        exact = await self.memories.find_by_prefix(partition_key, text.strip())
        if exact and len(text.strip()) >= 6:
            return exact
        hits = await self.memories.search(partition_key, text, top_k=FORGET_CANDIDATES)
        return [h.record for h in hits]

    async def forget(
        self,
        partition_key: str,
        memory_ids: Sequence[str],
        *,
        requested_by: str,
        by_person: bool = False,
        request_chat: str | None = None,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> Cascade:
        """Forget memories with their cascade and every trace, recorded in the ledger.
        ``request_chat``: the chat the request was made in; its newest lines that say the
        fact again (the request itself, a reply that repeated it) go too. ``dry_run``:
        what it would reach."""
        await self.gate.check(partition_key)
        lines: list[Ref] = []
        if request_chat is not None and self.activity is not None:
            facts = [
                r.content
                for memory_id in memory_ids
                if (r := await self.memories.get(partition_key, memory_id)) is not None
            ]
            for line in await self.activity.recent(request_chat, REQUEST_LINES):
                if any(restates(line.text, fact) for fact in facts):
                    lines.append(line_ref(line.session_key, line.id))
        return await self.memories.forget(
            partition_key,
            memory_ids,
            requested_by=requested_by,
            lines=lines,
            by_person=by_person,
            dry_run=dry_run,
            now=now,
        )

    async def erase(
        self,
        partition_key: str,
        *,
        requested_by: str,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> Cascade:
        """Erase a partition in every table (people only: the surfaces check who). Holds
        the partition's L3 and extraction leases, so no cycle or extraction that read it
        writes after it (``LeaseHeld`` names the process that runs one)."""
        async with AsyncExitStack() as held:
            if self.leases is not None and not dry_run:
                await held.enter_async_context(self.leases.hold("l3", partition_key))
                await held.enter_async_context(self.leases.hold("extraction", partition_key))
            return await self.memories.erase(
                partition_key, requested_by=requested_by, dry_run=dry_run, now=now
            )

    async def forget_plan(
        self, partition_key: str, record: MemoryRecord, *, now: datetime
    ) -> Confirmation:
        """What forgetting ``record`` would reach, and the code that confirms it (void once
        the memory changes or 10 minutes pass)."""
        plan = await self.forget(
            partition_key, [record.id], requested_by="plan", by_person=True, dry_run=True
        )
        digest = hashlib.sha256(f"{record.content}|{record.updated_at}".encode()).hexdigest()
        return confirm(f"forget|{partition_key}|{record.id}", digest, plan, now)

    async def erase_plan(self, partition_key: str, *, now: datetime) -> Confirmation:
        """What erasing a partition would remove (rows per table), and the code that
        confirms it (void once those counts change or 10 minutes pass)."""
        plan = await self.erase(partition_key, requested_by="plan", dry_run=True)
        # The code holds while what was shown holds; the chat and activity rows are left
        # out: the confirming message itself is one more chat line of the person (and they
        # go with the erasure anyway).
        shown = sorted((t, n) for t, n in plan.counts.items() if t in ERASE_CODE_TABLES)
        digest = hashlib.sha256(repr(shown).encode()).hexdigest()
        return confirm(f"erase|{partition_key}", digest, plan, now)

    async def delete_plan(self, partition_key: str, memory_id: str) -> Cascade:
        """What deleting a memory would do to what was derived from it (nothing written)."""
        return await self.memories.plan_delete(partition_key, memory_id)

    async def lineage_of(self, ref: Ref) -> Lineage:
        return Lineage(await self.lineage.made_from(ref), await self.lineage.used_by(ref))

    async def lineage_of_memory(self, partition_key: str, memory_id: str) -> Lineage:
        return await self.lineage_of(memory_ref(partition_key, memory_id))

    async def marks(self, partition_key: str, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(made from, used by) counts of memories, for a listing."""
        return await self.lineage.counts(partition_key, ids)

    async def pending(
        self, partition_key: str | None = None, limit: int = 100
    ) -> list[RederiveTask]:
        """Rows withheld, waiting for a loop to derive them again."""
        return await self.lineage.pending(partition_key, limit)

    async def ledger(self, limit: int = 100) -> list[LedgerEntry]:
        return await self.lineage.ledger(limit)
