"""L2 memories in PostgreSQL: the repository every surface reaches through the service.

It takes vectors, never texts to embed: the service embeds first, outside any
transaction, so no lock is ever held during an HTTP call. The partition cap is checked
in the same transaction as the insert (``amrita_memory.insert_memory_v3``; the chat tool
writes through ``write_memory_v2``, which first returns an identical write made moments
before, so a retry after a lost reply never makes a duplicate), and every
write of a vector is checked against the store's model (fingerprint and dimension) by
the database itself; retrieval is one SQL statement through the configured
:class:`~amrita_memory_pg.domain.ports.VectorBackend`; the sweep is set-based SQL in
batches with a persisted cursor. Time is an argument. The statements are the named
queries of ``sql/queries/memories.sql``, one method each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
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
from amrita_memory_pg.domain.ports import ProviderInfo, RecallingBackend, Vector, VectorBackend
from amrita_memory_pg.domain.records import (
    Category,
    MemoryQuery,
    MemoryRecord,
    NewMemory,
    Scope,
    SearchHit,
    SweepReport,
)
from amrita_memory_pg.domain.trail import Actor, Recalled, RecallLog, current_actor
from amrita_memory_pg.storage.pg.outcome import classify, write_connection
from amrita_memory_pg.storage.queries import bind, query
from amrita_memory_pg.storage.trail import (
    DEFAULT_BOUNDS,
    HistoryBounds,
    act,
    acts,
    raise_if_paused,
)


def record_from_row(row: Any) -> MemoryRecord:
    """A :class:`MemoryRecord` from a row with the memory table's column names."""
    return MemoryRecord(
        id=row["id"],
        partition_key=row["partition_key"],
        scope=row["scope"],
        content=row["content"],
        tags=tuple(row["tags"] or ()),
        importance=int(row["importance"]),
        category=row["category"],
        source=row["source"],
        author=row["author"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def hit_from_row(row: Any) -> SearchHit:
    distance = row["distance"]
    return SearchHit(
        record=record_from_row(row),
        distance=None if distance is None else float(distance),
        decay_score=float(row["decay_score"]),
        age_days=float(row["age_days"]),
        keyword_score=float(row["keyword_score"]) if "keyword_score" in row else 0.0,
        score=float(row["decay_score"]),
    )


#: SQLSTATEs of the model checks (sql/functions/memory_v3.sql), mapped by code, never by
#: message text: another embedding model's fingerprint, another dimension.
FINGERPRINT_MISMATCH = "AMF01"
DIMENSION_MISMATCH = "AMF03"
MODEL_MISMATCH = frozenset({FINGERPRINT_MISMATCH, DIMENSION_MISMATCH})


#: SQLSTATE of the manual-entry guard (sql/functions/protect_manual_v1.sql)
PROTECTED = "AMP01"


def raise_if_model_mismatch(exc: asyncpg.PostgresError) -> None:
    """Raise :class:`FingerprintMismatch` from a refused model check; return otherwise.

    Its text is the database's message and hint: which fingerprint or dimension the store
    holds, which the writer has, and the command that fixes it.
    """
    if exc.sqlstate not in MODEL_MISMATCH:
        return
    message = str(exc).strip()
    hint = getattr(exc, "hint", None)
    raise FingerprintMismatch(f"{message} ({hint})" if hint else message) from exc


async def count_all(conn: Any) -> int:
    """Memories in the whole store (``conn`` is a connection or a pool)."""
    return int(await conn.fetchval(query("count_all_memories")))


async def hold_index_gate(conn: Any, backend: VectorBackend) -> None:
    """Before a transaction's first backend hook: hold the index's write gate until
    commit, so that a Chroma rebuild never compares ids while a write has reached
    Chroma but not yet committed (or rolled back) in PostgreSQL. Nothing for a backend
    without write hooks."""
    if backend.write_hooks:
        await conn.execute(query("chroma_write_gate"))


def insert_args(new: NewMemory, provider: ProviderInfo, cap: int) -> dict[str, Any]:
    """``insert_memory_v3``'s arguments, by name (``write_memory_v2`` adds
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


@dataclass(frozen=True, slots=True)
class SweepParams:
    """The ``[decay]`` numbers of one sweep run."""

    short_term_days: float
    long_term_days: float
    batch_limit: int
    restart_clock_on_demote: bool
    #: keep ``source=user`` rows whatever their age (``protect_manual_memories``)
    protect_user: bool = True


class MemoryRepository:
    """L2 memories on one pool, with one vector backend kept in step."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        backend: VectorBackend,
        *,
        cap: int,
        acquire_timeout: float | None = None,
        history: HistoryBounds = DEFAULT_BOUNDS,
    ) -> None:
        self.pool = pool
        #: the change history's bounds, handed to its trigger with the writer (issue 17)
        self.history = history
        self.backend = backend
        #: ``per_session_memory_limit``: checked by the insert itself
        self.cap = cap
        #: longest wait for a pooled connection before a write is refused (None = no limit)
        self.acquire_timeout = acquire_timeout

    def _writing(self) -> contextlib.AbstractAsyncContextManager[PoolConnectionProxy]:
        """A connection for one write whose driver failures come out as
        :class:`DatabaseRefused` (certainly no effect) or :class:`OutcomeUnknown`
        (issue 11, F7)."""
        return write_connection(self.pool, acquire_timeout=self.acquire_timeout)

    async def _gate(self, conn: PoolConnectionProxy) -> None:
        await hold_index_gate(conn, self.backend)

    async def _purged(self, ids: list[str]) -> None:
        """Tell the index about rows a sweep batch deleted (already committed). Under the
        write gate: a rebuild's last pass re-copies rows missing from Chroma, and must not
        re-copy one of these after its removal reached Chroma."""
        if not self.backend.write_hooks:
            await self.backend.removed(ids)
            return
        async with self._writing() as conn, conn.transaction():
            await self._gate(conn)
            await self.backend.removed(ids)

    # ------------------------------------------------------------------ writes

    async def add(self, new: NewMemory, provider: ProviderInfo) -> MemoryRecord:
        """Insert under the partition cap; raises :class:`PartitionFull` or
        :class:`FingerprintMismatch` (the store holds another model's vectors)."""
        return (await self._insert(new, provider, None)).record

    async def write(
        self, new: NewMemory, provider: ProviderInfo, *, dedup_seconds: float = 0.0
    ) -> AddResult:
        """Insert under the partition cap, or return an identical memory written less than
        ``dedup_seconds`` before ``new.now`` (``write_memory_v2``: same partition, scope,
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
        explicit = self.backend.write_hooks or acts(self.history)
        async with self._writing() as conn, _transaction(conn, explicit):
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
    ) -> MemoryRecord | None:
        """Change some fields; ``vector`` is given exactly when the content changed.

        With ``protect_user`` (every automatic caller) a ``source=user`` memory is refused
        by the database: :class:`ProtectedMemory`, nothing changed.

        ``created_at`` is kept (the memory's age); a change of importance *tier* restarts
        the sweep's clock (``tier_since``). None when the id is not in the partition.
        A new vector of another model than the store's raises :class:`FingerprintMismatch`
        and changes nothing.
        """
        async with self._writing() as conn, conn.transaction():
            await act(conn, self.history)
            return await self._update(
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
        async with self._writing() as conn, conn.transaction():
            await act(conn, self.history, op="merge", note=keep_id)
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
            deleted = [
                gone
                for memory_id in merge_ids
                if (gone := await self._delete(conn, partition_key, memory_id, protect_merged))
                is not None
            ]
        return record, deleted

    async def delete(
        self, partition_key: str, memory_id: str, *, protect_user: bool = True
    ) -> bool:
        """Delete one memory of the partition; a foreign or unknown id deletes nothing.

        With ``protect_user`` (every automatic caller) a ``source=user`` memory is refused
        by the database: :class:`ProtectedMemory`, it stays.
        """
        async with self._writing() as conn, conn.transaction():
            await act(conn, self.history)
            return await self._delete(conn, partition_key, memory_id, protect_user) is not None

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

    # ------------------------------------------------------------------ reads

    async def get(self, partition_key: str, memory_id: str) -> MemoryRecord | None:
        """One memory of the partition, or None. The lookup before an update or a delete:
        a driver failure here comes out as :class:`DatabaseRefused` (a read changed nothing)."""
        try:
            row = await self.pool.fetchrow(query("get_memory"), partition_key, memory_id)
        except Exception as exc:
            mapped = classify(exc, sent=False)
            if mapped is None:
                raise
            raise mapped from exc
        return None if row is None else record_from_row(row)

    async def count(self, partition_key: str) -> int:
        value = await self.pool.fetchval(query("count_memories"), partition_key)
        return int(value)

    async def list_page(
        self, partition_key: str, *, limit: int, offset: int = 0
    ) -> tuple[list[MemoryRecord], int]:
        """One page in (created_at, id) order — deterministic (reference W6) — and the total."""
        rows = await self.pool.fetch(query("list_memories_page"), partition_key, limit, offset)
        if rows:
            return [record_from_row(r) for r in rows], int(rows[0]["total"])
        return [], await self.count(partition_key) if offset else 0

    async def list_filtered(
        self,
        partition_key: str,
        *,
        limit: int,
        offset: int = 0,
        category: str | None = None,
        min_importance: int | None = None,
    ) -> tuple[list[MemoryRecord], int]:
        """:meth:`list_page` of the memories of one category and/or a minimum importance."""
        rows = await self.pool.fetch(
            query("list_memories_filtered"),
            partition_key,
            limit,
            offset,
            category,
            min_importance,
        )
        if rows:
            return [record_from_row(r) for r in rows], int(rows[0]["total"])
        if not offset:
            return [], 0
        total = await self.pool.fetchval(
            query("count_memories_filtered"), partition_key, category, min_importance
        )
        return [], int(total)

    async def replace_auto(
        self,
        partition_key: str,
        scope: Scope,
        entries: Sequence[tuple[str, Category, int]],
        vectors: Sequence[Vector],
        *,
        fingerprint: str,
        provider: ProviderInfo,
        now: datetime,
        before_commit: Any = None,
        tokens: Sequence[Sequence[str]] | None = None,
    ) -> tuple[int, int]:
        """Replace the memories an earlier extraction made in the partition (``origin =
        extraction``, still ``source=auto``) by ``entries`` (content, category,
        importance) in ONE transaction; every other row stays (the chat model's, imports,
        L3's, a person's). The rows are written as the extraction's whatever the caller's
        actor, so their origin is ``extraction`` and the next run replaces them.

        Under the partition's cap lock: the old extracted rows are deleted, each entry inserted
        through ``insert_memory_v3`` (model check, cap) with its search ``tokens`` (one list
        per entry; None = left to the token backfill). Anything failing — the cap, another
        model, the vector index, ``before_commit`` (an awaitable callable given the
        connection, e.g. the run record) — rolls everything back: the old auto set stays.
        Returns (deleted, inserted).
        """
        if len(entries) != len(vectors):
            raise ValueError("one vector per entry")
        if tokens is not None and len(tokens) != len(entries):
            raise ValueError("one token list per entry")
        token_lists: list[list[str] | None] = (
            [list(t) for t in tokens] if tokens is not None else [None] * len(entries)
        )
        writer = current_actor()
        if writer is None or writer.kind != "extraction":
            writer = Actor("extraction", partition_key)
        async with self._writing() as conn, conn.transaction():
            await act(conn, self.history, actor=writer)
            await conn.execute(query("auto_lock_partition"), partition_key)
            try:
                gone = [
                    r["id"] for r in await conn.fetch(query("delete_auto_memories"), partition_key)
                ]
            except asyncpg.PostgresError as exc:
                raise_if_paused(exc, partition_key)
                raise
            await self._gate(conn)  # before the removal and the inserts' hooks below
            if gone and self.backend.write_hooks:
                await self.backend.removed(gone)
            for (content, category, importance), vector, entry_tokens in zip(
                entries, vectors, token_lists, strict=True
            ):
                try:
                    row = await conn.fetchrow(
                        query("insert_auto_memory"),
                        partition_key,
                        scope,
                        content,
                        importance,
                        category,
                        vector,
                        fingerprint,
                        now,
                        self.cap,
                        entry_tokens,
                        provider.protocol,
                        provider.model,
                        provider.base_url,
                    )
                except asyncpg.PostgresError as exc:
                    raise_if_model_mismatch(exc)
                    raise_if_paused(exc, partition_key)
                    raise
                assert row is not None
                if row["id"] is None:
                    raise PartitionFull(partition_key, self.cap)
                if self.backend.write_hooks:
                    record = MemoryRecord(
                        id=row["id"],
                        partition_key=partition_key,
                        scope=scope,
                        content=content,
                        tags=(),
                        importance=importance,
                        category=category,
                        source="auto",
                        author=None,
                        created_at=now,
                        updated_at=now,
                    )
                    await self.backend.added(record, vector)
            if before_commit is not None:
                await before_commit(conn)
        return len(gone), len(entries)

    async def digest(self, partition_key: str) -> tuple[int, str]:
        """(count, digest of ids and update times) of a partition: what a clear would delete."""
        row = await self.pool.fetchrow(query("partition_digest"), partition_key)
        assert row is not None
        return int(row["n"]), str(row["digest"])

    async def clear(self, partition_key: str) -> int:
        """Delete every memory of the partition (a person's ``clear``); returns how many."""
        async with self._writing() as conn, conn.transaction():
            await act(conn, self.history)
            gone = [r["id"] for r in await conn.fetch(query("clear_partition"), partition_key)]
            if gone:
                await self._gate(conn)
                await self.backend.removed(gone)
        return len(gone)

    async def find_by_prefix(self, partition_key: str, prefix: str) -> list[MemoryRecord]:
        """Exact id first; otherwise every id of the partition starting with ``prefix``."""
        exact = await self.get(partition_key, prefix)
        if exact is not None:
            return [exact]
        if not prefix:
            return []
        rows = await self.pool.fetch(query("find_memories_by_prefix"), partition_key, prefix)
        return [record_from_row(r) for r in rows]

    async def search(self, q: MemoryQuery) -> list[SearchHit]:
        """The true top_k by decay score (relevance alone when decay is disabled), ranked
        as ``q.ranking`` says (default: vector similarity, reference §5.1); ``q.vector``
        may be None in keyword mode only."""
        try:
            return await self.backend.search(self.pool, q)
        except asyncpg.PostgresError as exc:
            # search_memories_v6 refuses a query of another dimension than the store's
            # (AMF03) before pgvector would fail on the first stored vector.
            raise_if_model_mismatch(exc)
            raise

    @property
    def recalls(self) -> bool:
        """Whether :meth:`recall` checks the pause, searches and logs in one statement."""
        return isinstance(self.backend, RecallingBackend)

    async def recall(self, q: MemoryQuery, log: RecallLog) -> Recalled | None:
        """The search, the pause check and the access log in one statement, when the
        backend searches in PostgreSQL; None otherwise (the caller searches, then logs)."""
        if not isinstance(self.backend, RecallingBackend):
            return None
        try:
            return await self.backend.recall(self.pool, q, log)
        except asyncpg.PostgresError as exc:
            raise_if_model_mismatch(exc)
            raise

    # ------------------------------------------------------------------ sweep

    async def sweep(
        self,
        params: SweepParams,
        *,
        now: datetime,
        dry_run: bool = False,
        max_batches: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> SweepReport:
        """Demote/purge what outlived its tier (reference §5.2), batch by batch.

        ``progress`` hears the rows scanned so far after each batch (a background job's
        progress bar; the CLI passes none).

        A run starts at the persisted cursor and walks to the end of the table, then from
        the start back to where it began: one full pass, each batch its own transaction.
        ``max_batches`` stops early (the cursor remembers where); ``dry_run`` walks the
        whole table from the start and changes nothing, cursor included.
        """
        args = (
            now,
            float(params.short_term_days),
            float(params.long_term_days),
            params.batch_limit,
            params.restart_clock_on_demote,
            params.protect_user,
        )
        totals = [0, 0, 0, 0]
        batches = 0
        wrapped = False
        # A dry run walks the whole table from the start with an explicit cursor and
        # persists nothing; a real run starts at the persisted cursor (NULL = use it).
        cursor: str | None = "" if dry_run else None
        start = None
        if not dry_run:
            start = await self.pool.fetchval(query("sweep_cursor"))
        until: str | None = None
        while max_batches is None or batches < max_batches:
            row = await self.pool.fetchrow(
                query("sweep_batch"),
                *args,
                dry_run,
                cursor,
                until,
            )
            assert row is not None
            batches += 1
            self._accumulate(totals, row)
            if progress is not None:
                progress(totals[0])
            if row["purged_ids"] and not dry_run:
                await self._purged(list(row["purged_ids"]))
            if row["wrapped"]:
                if until is None and start:
                    wrapped = True
                    until = start  # second leg: from the start of the table back to `start`
                    continue
                wrapped = wrapped or until is None
                break
            if dry_run:
                cursor = row["next_cursor"]
        return self._report(totals, wrapped)

    @staticmethod
    def _report(totals: list[int], wrapped: bool) -> SweepReport:
        return SweepReport(
            scanned=totals[0], demoted=totals[1], purged=totals[2], kept=totals[3], wrapped=wrapped
        )

    @staticmethod
    def _accumulate(totals: list[int], row: Any) -> None:
        totals[0] += row["scanned"]
        totals[1] += row["demoted"]
        totals[2] += row["purged"]
        totals[3] += row["kept"]
