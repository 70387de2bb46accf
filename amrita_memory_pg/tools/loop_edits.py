"""An L3 loop edit checked before it is made: what the single edit tools and the batch share.

Each edit tool of the loop first *plans* its change — reads what it names, applies the
loop's rules (a ``source=user`` memory is never rewritten or deleted, a memo fits its
cap…) and refuses with a :class:`ToolError` saying what to fix — and only then *applies*
it. A single tool plans and applies in one call; ``subconscious_batch_edit``
(:mod:`~amrita_memory_pg.tools.loop_batch`) plans every operation first and applies
them all in one transaction, so the rules are written once, in the plans.

Memories are named by id or by a unique id prefix of at least
:data:`~amrita_memory_pg.domain.consolidation.SHORT_ID` characters (what the pre-pass
shows): a :class:`Lookup` finds them in the store (a single call) or in a snapshot of
the partition taken once for a whole batch (:class:`Snapshot`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from amrita_memory_pg.domain.consolidation import SHORT_ID
from amrita_memory_pg.domain.errors import ToolError
from amrita_memory_pg.domain.records import MemoryRecord
from amrita_memory_pg.usecases.memories import MemoryCases

#: a plan's write: the reply and how many memories it changed
Applied = tuple[dict[str, Any], int]


@dataclass(frozen=True, slots=True)
class Planned:
    """A checked edit, nothing written yet."""

    #: the reply as if done (a dry run's, with ``dry_run`` added)
    reply: dict[str, Any]
    #: memories it changes (what a dry run counts)
    changes: int
    #: makes the change; returns the reply and the memories actually changed
    apply: Callable[[], Awaitable[Applied]]
    #: ids it deletes: a later operation of the same batch may not name them
    gone: tuple[str, ...] = ()
    #: new texts it embeds: a batch embeds them all before its transaction
    texts: tuple[str, ...] = ()


class Lookup(Protocol):
    """Where a plan finds the memories an edit names."""

    async def find(self, ref: str) -> MemoryRecord | None:
        """The memory ``ref`` names (an id, or a unique prefix of one), None when none;
        :class:`ToolError` when a prefix names several."""
        ...

    async def empty(self) -> bool:
        """Whether the partition has no memory at all (the reference's wording differs)."""
        ...


def _one(ref: str, matches: Sequence[MemoryRecord]) -> MemoryRecord | None:
    if len(matches) > 1:
        raise ToolError(f"ID 前缀 {ref} 对应多条记忆，请给出更长的 ID")
    return matches[0] if matches else None


class StoreLookup:
    """A single call's look-up: the store, through the use cases (the pause first)."""

    def __init__(self, memories: MemoryCases, partition_key: str) -> None:
        self.memories = memories
        self.partition_key = partition_key

    async def find(self, ref: str) -> MemoryRecord | None:
        if len(ref) < SHORT_ID:
            return await self.memories.get(self.partition_key, ref)
        # the exact id first, then the prefix (one statement each)
        return _one(ref, await self.memories.find_by_prefix(self.partition_key, ref))

    async def empty(self) -> bool:
        return await self.memories.count(self.partition_key) == 0


class Snapshot:
    """A batch's look-up: the partition read once before the batch is planned, minus what
    its earlier operations delete (an operation naming one of those is refused)."""

    def __init__(self, records: Iterable[MemoryRecord]) -> None:
        self.records = {r.id: r for r in records}
        #: id → the number (from 1) of the operation that deletes it
        self.deleted: dict[str, int] = {}

    def _match(self, ref: str) -> list[MemoryRecord]:
        exact = self.records.get(ref)
        if exact is not None or len(ref) < SHORT_ID:
            return [] if exact is None else [exact]
        return [r for memory_id, r in self.records.items() if memory_id.startswith(ref)]

    async def find(self, ref: str) -> MemoryRecord | None:
        found = _one(ref, self._match(ref))
        if found is not None and found.id in self.deleted:
            number = self.deleted[found.id]
            raise ToolError(f"{ref} 已被本批第 {number} 个操作删除或并入，不能再修改")
        return found

    async def empty(self) -> bool:
        return not self.records

    def delete(self, ids: Iterable[str], number: int) -> None:
        for memory_id in ids:
            self.deleted.setdefault(memory_id, number)


async def existing(lookup: Lookup, ref: str) -> MemoryRecord:
    """The memory ``ref`` names; the reference's refusals when there is none."""
    record = await lookup.find(ref)
    if record is None:
        if await lookup.empty():
            raise ToolError("未找到任何记忆")
        raise ToolError(f"未找到ID为 {ref} 的记忆")
    return record
