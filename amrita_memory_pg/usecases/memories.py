"""L2 memories for every surface: the pause first, then the service."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from amrita_memory_pg.domain.records import MemoryRecord
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.storage.memories import AddResult
from amrita_memory_pg.usecases.pause import PauseGate, pause_gate
from amrita_memory_pg.usecases.values import (
    MemoryChange,
    MemoryQuery,
    NewMemory,
    Refusal,
    SearchResult,
)


def required_text(value: str, refusal: str) -> str:
    """``value`` stripped; :class:`Refusal` with ``refusal`` when nothing is left."""
    text = value.strip()
    if not text:
        raise Refusal(refusal)
    return text


class MemoryCases:
    """Write, search, change, merge, delete and list memories of one partition.

    Every method checks the pause first (:class:`PauseGate`: automatic callers only);
    domain errors (``PartitionFull``, ``ProtectedMemory``, ``MemoryPaused``,
    ``EmbeddingError``, ``FingerprintMismatch``) go out unchanged, for the surface's edge.
    """

    def __init__(self, service: MemoryService, gate: PauseGate) -> None:
        self.service = service
        self.gate = gate

    @classmethod
    def of(cls, service: MemoryService) -> MemoryCases:
        """The cases over ``service``, paused by its own trail (people's surfaces)."""
        return cls(service, pause_gate(service.trail))

    async def write(self, new: NewMemory, *, idempotent: bool = True) -> AddResult:
        """Embed and insert; ``idempotent``: an identical write within the dedup window
        returns the first one (a chat model retrying a lost reply)."""
        await self.gate.check(new.partition_key)
        fields: dict[str, Any] = {
            "partition_key": new.partition_key,
            "scope": new.scope,
            "content": new.content,
            "tags": new.tags,
            "importance": new.importance,
            "category": new.category,
            "source": new.source,
            "author": new.author,
            "now": new.now,
        }
        if idempotent:
            return await self.service.write(**fields)
        return AddResult(await self.service.add(**fields))

    async def search(self, query: MemoryQuery) -> SearchResult:
        """The top_k by decay score. With ``recall`` the service checks the pause first
        (before the embedding call) for every caller, people included."""
        if query.recall is None:
            await self.gate.check(query.partition_key)
        hits = await self.service.search(
            query.partition_key,
            query.text,
            top_k=query.top_k,
            importance=query.importance,
            tags=query.tags,
            category=query.category,
            mode=query.mode,
            now=query.now,
            recall=query.recall,
            scope=query.scope,
        )
        return SearchResult(hits, query.mode or self.service.settings.retrieval.default_mode)

    async def get(self, partition_key: str, memory_id: str) -> MemoryRecord | None:
        await self.gate.check(partition_key)
        return await self.service.get(partition_key, memory_id)

    async def count(self, partition_key: str) -> int:
        await self.gate.check(partition_key)
        return await self.service.count(partition_key)

    async def change(
        self,
        partition_key: str,
        memory_id: str,
        change: MemoryChange,
        *,
        flag_only: bool = False,
        by_person: bool = False,
        cascade: bool = False,
        now: datetime | None = None,
    ) -> MemoryRecord | None:
        """Apply ``change`` (None: the memory is gone). ``flag_only``: only add its tags,
        the one change allowed on a memory a person wrote; ``by_person``: a person's
        change, which may rewrite a manual memory (``ProtectedMemory`` otherwise);
        ``cascade``: a fact changed (a person's or the chat model's edit of its text), so
        what was derived from it is withheld until the L3 loop derives it again."""
        await self.gate.check(partition_key)
        if flag_only:
            return await self.service.add_tags(partition_key, memory_id, change.tags or (), now=now)
        return await self.service.update(
            partition_key,
            memory_id,
            content=change.content,
            tags=change.tags,
            importance=change.importance,
            category=change.category,
            now=now,
            by_person=by_person,
            cascade=cascade,
        )

    async def delete(self, partition_key: str, memory_id: str, *, by_person: bool = False) -> bool:
        """False when the id is not in the partition; ``by_person`` as for :meth:`change`."""
        await self.gate.check(partition_key)
        return await self.service.delete(partition_key, memory_id, by_person=by_person)

    async def find_by_prefix(self, partition_key: str, prefix: str) -> list[MemoryRecord]:
        """The memories whose id starts with ``prefix`` (a person types a short id)."""
        await self.gate.check(partition_key)
        return await self.service.find_by_prefix(partition_key, prefix)

    async def merge(
        self,
        partition_key: str,
        keep_id: str,
        merge_ids: Sequence[str],
        change: MemoryChange,
        *,
        now: datetime | None = None,
    ) -> tuple[MemoryRecord, list[str]] | None:
        await self.gate.check(partition_key)
        return await self.service.merge(
            partition_key,
            keep_id,
            merge_ids,
            content=change.content,
            tags=change.tags,
            importance=change.importance,
            now=now,
        )

    async def page(
        self,
        partition_key: str,
        *,
        limit: int,
        offset: int = 0,
        category: str | None = None,
        min_importance: int | None = None,
    ) -> tuple[list[MemoryRecord], int]:
        """One page in (created_at, id) order and the total (of the filtered ones)."""
        await self.gate.check(partition_key)
        return await self.service.list_filtered(
            partition_key,
            limit=limit,
            offset=offset,
            category=category,
            min_importance=min_importance,
        )
