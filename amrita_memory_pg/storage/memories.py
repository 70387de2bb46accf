"""L2 memories in PostgreSQL: the repository every surface reaches through the service.

It takes vectors, never texts to embed: the service embeds first, outside any
transaction, so no lock is ever held during an HTTP call. The partition cap is checked
in the same transaction as the insert (``amrita_memory.insert_memory_v7``; the chat tool
writes through ``write_memory_v6``, which first returns an identical write made moments
before, so a retry after a lost reply never makes a duplicate), and every
write of a vector is checked against the store's model (fingerprint and dimension) by
the database itself; retrieval is one SQL statement through the configured
:class:`~amrita_memory_pg.domain.ports.VectorBackend`; the sweep is set-based SQL in
batches with a persisted cursor. Time is an argument. The statements are the named
queries of ``sql/queries/memories.sql``, one method each.

The writes of one memory live here; the reads in ``memory_reads``, the many-row writes
and the sweep in ``memory_bulk``, the row mapping and the SQLSTATEs in ``memory_rows``.
This module still exports all of them, so callers import from one place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from amrita_memory_pg.domain.errors import (
    FingerprintMismatch,
    PartitionFull,
    ProtectedMemory,
)
from amrita_memory_pg.domain.lineage import Cascade, current_derivation, memory_ref
from amrita_memory_pg.domain.ports import ProviderInfo, Vector
from amrita_memory_pg.domain.records import (
    Category,
    MemoryRecord,
    NewMemory,
    SearchHit,
    SweepReport,
)
from amrita_memory_pg.domain.trail import OWNING_KINDS, current_actor, ownership_note
from amrita_memory_pg.storage.lineage import deriving_now, record_derived, record_edges
from amrita_memory_pg.storage.memory_bulk import BulkWrites, SweepParams
from amrita_memory_pg.storage.memory_forget import ForgetWrites, about_json
from amrita_memory_pg.storage.memory_reads import MemoryReads
from amrita_memory_pg.storage.memory_rows import (
    DIMENSION_MISMATCH,
    FINGERPRINT_MISMATCH,
    MODEL_MISMATCH,
    PROTECTED,
    count_all,
    hit_from_row,
    hold_index_gate,
    raise_if_model_mismatch,
    record_from_row,
)
from amrita_memory_pg.storage.queries import bind, query
from amrita_memory_pg.storage.trail import act, acts, raise_if_paused

__all__ = [
    "DIMENSION_MISMATCH",
    "FINGERPRINT_MISMATCH",
    "MODEL_MISMATCH",
    "PROTECTED",
    "AddResult",
    "FingerprintMismatch",
    "MemoryRecord",
    "MemoryRepository",
    "SearchHit",
    "SweepParams",
    "SweepReport",
    "count_all",
    "hit_from_row",
    "hold_index_gate",
    "insert_args",
    "raise_if_model_mismatch",
    "record_from_row",
]


def insert_args(new: NewMemory, provider: ProviderInfo, cap: int) -> dict[str, Any]:
    """``insert_memory_v7``'s arguments, by name (``write_memory_v6`` adds
    ``p_dedup_seconds``): the ONE place a memory to write meets its SQL."""
    return {
        "p_partition": new.partition_key,
        "p_scope": new.scope,
        "p_content": new.content,
        "p_tags": list(new.tags),
        "p_importance": new.importance,
        "p_category": new.category,
        "p_source": new.source,
        "p_author": new.author,
        "p_embedding": new.vector,
        "p_fingerprint": new.fingerprint,
        "p_now": new.now,
        "p_cap": cap,
        "p_tokens": None if new.tokens is None else list(new.tokens),
        "p_protocol": provider.protocol,
        "p_model": provider.model,
        "p_base_url": provider.base_url,
    }


def _transaction(conn: Any, explicit: bool) -> contextlib.AbstractAsyncContextManager[Any]:
    return conn.transaction() if explicit else contextlib.nullcontext()


@dataclass(frozen=True, slots=True)
class AddResult:
    """What an insert did: the memory, and whether it already existed (a retried write)."""

    record: MemoryRecord
    #: True when an identical write within the dedup window was found and returned
    duplicate: bool = False


class MemoryRepository(MemoryReads, BulkWrites, ForgetWrites):
    """L2 memories on one pool, with one vector backend kept in step: the writes of one
    memory here, the reads in :class:`MemoryReads`, the many-row writes and the sweep in
    :class:`BulkWrites`, the cascades of deletes, forgets and erasures in
    :class:`ForgetWrites`."""

    async def add(self, new: NewMemory, provider: ProviderInfo) -> MemoryRecord:
        """Insert under the partition cap; raises :class:`PartitionFull` or
        :class:`FingerprintMismatch` (the store holds another model's vectors)."""
        return (await self._insert(new, provider, None)).record

    async def write(
        self, new: NewMemory, provider: ProviderInfo, *, dedup_seconds: float = 0.0
    ) -> AddResult:
        """Insert under the partition cap, or return an identical memory written less than
        ``dedup_seconds`` before ``new.now`` (``write_memory_v6``: same partition, scope,
        content, author, source and model; checked under the cap's lock, so two
        concurrent identical writes leave one row).

        Raises :class:`PartitionFull`, :class:`FingerprintMismatch`, and for a driver
        failure :class:`DatabaseRefused` (nothing was written) or :class:`OutcomeUnknown`.
        """
        return await self._insert(new, provider, float(dedup_seconds))

    async def _insert(
        self, new: NewMemory, provider: ProviderInfo, dedup_seconds: float | None
    ) -> AddResult:
        """:meth:`add` (``dedup_seconds`` None: ``insert_memory``) and :meth:`write`
        (``write_memory``), one path."""
        args = insert_args(new, provider, self.cap)
        if dedup_seconds is None:
            statement = query("insert_memory")
            values = bind("insert_memory", args)
        else:
            statement = query("write_memory")
            values = bind("write_memory", {**args, "p_dedup_seconds": dedup_seconds})
        # Each statement is its own transaction: the cap's advisory lock lasts until its
        # commit. Only a backend with write hooks (chroma) or a writer to name needs an
        # explicit transaction around insert + hook — three round trips instead of one.
        explicit = self.backend.write_hooks or acts(self.history) or deriving_now()
        async with self._writing(new.partition_key) as conn, _transaction(conn, explicit):
            if explicit:
                await act(conn, self.history)
            try:
                row = await conn.fetchrow(statement, *values)
            except asyncpg.PostgresError as exc:
                raise_if_model_mismatch(exc)
                raise_if_paused(exc, new.partition_key)
                raise
            assert row is not None
            if row["id"] is None:
                raise PartitionFull(new.partition_key, self.cap)
            if dedup_seconds is None:
                record = MemoryRecord(
                    id=row["id"],
                    partition_key=new.partition_key,
                    scope=new.scope,
                    content=new.content,
                    tags=new.tags,
                    importance=new.importance,
                    category=new.category,
                    source=new.source,
                    author=new.author,
                    created_at=new.now,
                    updated_at=new.now,
                )
            else:
                record = record_from_row(row)
                if row["duplicate"]:
                    return AddResult(record, duplicate=True)
            # A derived memory (the loop's) records what it was made from, in its transaction.
            await record_derived(
                conn, memory_ref(new.partition_key, record.id), new.content, new.now
            )
            # Inside the transaction: if a secondary index refuses it, the insert rolls back.
            if self.backend.write_hooks:
                await self._gate(conn)
                await self.backend.added(record, new.vector)
        return AddResult(record)

    async def update(
        self,
        partition_key: str,
        memory_id: str,
        *,
        content: str | None = None,
        tags: Sequence[str] | None = None,
        importance: int | None = None,
        category: Category | None = None,
        vector: Vector | None = None,
        fingerprint: str,
        now: datetime,
        tokens: Sequence[str] | None = None,
        protect_user: bool = True,
        take_over: bool = True,
        cascade_from: str | None = None,
    ) -> MemoryRecord | None:
        """Change some fields; ``vector`` is given exactly when the content changed.

        With ``protect_user`` (every automatic caller) a ``source=user`` memory is refused
        by the database: :class:`ProtectedMemory`, nothing changed. With ``take_over``
        (every change but a flag) the chat model's or the loop's change makes the memory
        theirs (``origin``), so extraction no longer replaces it. ``cascade_from``: the
        text before a person's or the chat model's change; what was derived from the
        memory is then withheld for the loop to derive again from the new text (the
        change cascade of ``lineage.sql``), in the same transaction. A change inside
        :func:`~amrita_memory_pg.domain.lineage.deriving` (the loop's rewrite) records
        what the new text was made from.

        ``created_at`` is kept (the memory's age); a change of importance *tier* restarts
        the sweep's clock (``tier_since``). None when the id is not in the partition.
        A new vector of another model than the store's raises :class:`FingerprintMismatch`
        and changes nothing.
        """
        async with self._writing(partition_key) as conn, conn.transaction():
            await act(conn, self.history)
            if take_over:
                await self._take_over(conn, partition_key, memory_id)
            record = await self._update(
                conn,
                partition_key,
                memory_id,
                content=content,
                tags=tags,
                importance=importance,
                category=category,
                vector=vector,
                fingerprint=fingerprint,
                now=now,
                tokens=tokens,
                protect_user=protect_user,
            )
            if record is not None and vector is not None:
                ref = memory_ref(partition_key, memory_id)
                await record_derived(conn, ref, record.content, now, own_earlier_text=True)
                if cascade_from is not None and cascade_from != record.content:
                    await self.cascade(
                        conn,
                        [ref],
                        mode="change",
                        about=about_json(cascade_from, record.content),
                        now=now,
                    )
            return record

    async def _take_over(
        self,
        conn: PoolConnectionProxy,
        partition_key: str,
        memory_id: str,
        *,
        op: str | None = None,
        note: str = "",
    ) -> bool:
        """An automatic writer's change makes the memory its own (``origin``; extraction
        replaces only its own rows), named in the note of the change's history row after
        the transaction's own (``op``/``note``: a merge's). Whether it changed hands;
        nothing for other writers."""
        who = current_actor()
        if who is None or who.kind not in OWNING_KINDS:
            return False
        previous = await conn.fetchval(
            query("take_over_memory"), partition_key, memory_id, who.kind
        )
        if previous is None:
            return False
        taken = ownership_note(previous, who.kind)
        await act(conn, self.history, op=op, note=f"{note} {taken}" if note else taken)
        return True

    async def _update(
        self,
        conn: PoolConnectionProxy,
        partition_key: str,
        memory_id: str,
        *,
        content: str | None,
        tags: Sequence[str] | None,
        importance: int | None,
        category: Category | None,
        vector: Vector | None,
        fingerprint: str,
        now: datetime,
        tokens: Sequence[str] | None,
        protect_user: bool,
    ) -> MemoryRecord | None:
        """The update statement and its backend hook, inside the caller's transaction."""
        try:
            row = await conn.fetchrow(
                query("update_memory_guarded"),
                partition_key,
                memory_id,
                content if vector is not None else None,
                list(tags) if tags is not None else None,
                importance,
                category is not None,
                category,
                vector,
                fingerprint,
                now,
                None if tokens is None else list(tokens),
                protect_user,
            )
        except asyncpg.PostgresError as exc:
            if exc.sqlstate == PROTECTED:
                raise ProtectedMemory(memory_id) from exc
            raise_if_model_mismatch(exc)
            raise_if_paused(exc, partition_key)
            raise
        if row is None:
            return None
        record = record_from_row(row)
        await self._gate(conn)
        await self.backend.updated(record, vector)
        return record

    async def merge(
        self,
        partition_key: str,
        keep_id: str,
        merge_ids: Sequence[str],
        *,
        content: str | None = None,
        tags: Sequence[str] | None = None,
        importance: int | None = None,
        vector: Vector | None = None,
        fingerprint: str,
        now: datetime,
        tokens: Sequence[str] | None = None,
        protect_keep: bool = True,
        protect_merged: bool = True,
    ) -> tuple[MemoryRecord, list[str]] | None:
        """Update ``keep_id`` and delete ``merge_ids``, all in ONE transaction (the L3
        loop's merge of a duplicate group: never half a merge). None, with nothing
        changed, when ``keep_id`` is not in the partition; the ids actually deleted
        (foreign or unknown ones delete nothing) come back with the kept record. A
        protected ``source=user`` row (``protect_keep`` for the kept one, ``protect_merged``
        for the deleted ones) raises :class:`ProtectedMemory` and rolls the merge back."""
        async with self._writing(partition_key) as conn, conn.transaction():
            await act(conn, self.history, op="merge", note=keep_id)
            taken = await self._take_over(conn, partition_key, keep_id, op="merge", note=keep_id)
            record = await self._update(
                conn,
                partition_key,
                keep_id,
                content=content,
                tags=tags,
                importance=importance,
                category=None,
                vector=vector,
                fingerprint=fingerprint,
                now=now,
                tokens=tokens,
                protect_user=protect_keep,
            )
            if record is None:
                return None
            if taken:  # the merged rows' history names the kept one, nothing more
                await act(conn, self.history, op="merge", note=keep_id)
            deleted = [
                gone
                for memory_id in merge_ids
                if (gone := await self._delete(conn, partition_key, memory_id, protect_merged))
                is not None
            ]
            # The kept memory is made from those merged into it and from its own earlier
            # text (a self-edge): a forget of one merged memory withholds it, not deletes it.
            derivation = current_derivation()
            if derivation is not None and deleted:
                keep = memory_ref(partition_key, keep_id)
                edges = [(keep, memory_ref(partition_key, gone)) for gone in deleted]
                await record_edges(
                    conn,
                    [*edges, (keep, keep)],
                    made_by=derivation.made_by,
                    cycle_id=derivation.cycle_id,
                    now=now,
                )
        return record, deleted

    async def delete(
        self, partition_key: str, memory_id: str, *, protect_user: bool = True
    ) -> bool:
        """Delete one memory of the partition; a foreign or unknown id deletes nothing.

        With ``protect_user`` (every automatic caller) a ``source=user`` memory is refused
        by the database: :class:`ProtectedMemory`, it stays.
        """
        async with self._writing(partition_key) as conn, conn.transaction():
            await act(conn, self.history)
            return await self._delete(conn, partition_key, memory_id, protect_user) is not None

    async def delete_cascading(
        self,
        partition_key: str,
        memory_id: str,
        *,
        protect_user: bool = True,
        content: str | None,
        now: datetime,
    ) -> Cascade | None:
        """:meth:`delete` and, in the same transaction, the cascade of what was derived from
        the memory (``lineage.sql``, mode delete: made from it alone → deleted, from
        several → withheld for the loop, told to leave ``content`` out). None when the id
        is not in the partition."""
        async with self._writing(partition_key) as conn, conn.transaction():
            await act(conn, self.history)
            gone = await self._delete(conn, partition_key, memory_id, protect_user)
            if gone is None:
                return None
            return await self.cascade(
                conn,
                [memory_ref(partition_key, gone)],
                mode="delete",
                about=about_json(content),
                now=now,
            )

    async def _delete(
        self, conn: PoolConnectionProxy, partition_key: str, memory_id: str, protect_user: bool
    ) -> str | None:
        """The delete statement and its backend hook, inside the caller's transaction."""
        try:
            deleted: str | None = await conn.fetchval(
                query("delete_memory_guarded"), partition_key, memory_id, protect_user
            )
        except asyncpg.PostgresError as exc:
            if exc.sqlstate == PROTECTED:
                raise ProtectedMemory(memory_id) from exc
            raise_if_paused(exc, partition_key)
            raise
        if deleted is not None:
            await self._gate(conn)
            await self.backend.removed([deleted])
        return deleted
