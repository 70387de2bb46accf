"""Writes of many L2 memories at once: an extraction's replacement of its own rows, a
person's clear of a partition, and the sweep (set-based SQL in batches with a persisted
cursor)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.errors import PartitionFull
from amrita_memory_pg.domain.lineage import Ref, memory_ref
from amrita_memory_pg.domain.ports import ProviderInfo, Vector
from amrita_memory_pg.domain.records import Category, MemoryRecord, Scope, SweepReport
from amrita_memory_pg.domain.trail import Actor, current_actor
from amrita_memory_pg.storage.lineage import carry_lineage, record_edges
from amrita_memory_pg.storage.memory_core import RepositoryCore
from amrita_memory_pg.storage.memory_rows import raise_if_model_mismatch
from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.trail import act, raise_if_paused


@dataclass(frozen=True, slots=True)
class SweepParams:
    """The ``[decay]`` numbers of one sweep run."""

    short_term_days: float
    long_term_days: float
    batch_limit: int
    restart_clock_on_demote: bool
    #: keep ``source=user`` rows whatever their age (``protect_manual_memories``)
    protect_user: bool = True


class BulkWrites(RepositoryCore):
    """Partition-wide and table-wide writes, each batch in one transaction."""

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
        sources: Sequence[Sequence[Ref]] | None = None,
    ) -> tuple[int, int]:
        """Replace the memories an earlier extraction made in the partition (``origin =
        extraction``, still ``source=auto``) by ``entries`` (content, category,
        importance) in ONE transaction; every other row stays (the chat model's, imports,
        L3's, a person's). The rows are written as the extraction's whatever the caller's
        actor, so their origin is ``extraction`` and the next run replaces them.

        Under the partition's cap lock: the old extracted rows are deleted, each entry inserted
        through ``insert_memory_v7`` (model check, cap) with its search ``tokens`` (one list
        per entry; None = left to the token backfill). Anything failing — the cap, another
        model, the vector index, ``before_commit`` (an awaitable callable given the
        connection, e.g. the run record) — rolls everything back: the old auto set stays.
        ``sources``: per entry, the chat lines it was made from (recorded as its lineage in
        the same transaction); an entry with the text of a replaced row also takes that
        row's lineage, and what was made from the replaced row is made from it.
        Returns (deleted, inserted).
        """
        if len(entries) != len(vectors):
            raise ValueError("one vector per entry")
        if tokens is not None and len(tokens) != len(entries):
            raise ValueError("one token list per entry")
        if sources is not None and len(sources) != len(entries):
            raise ValueError("one source list per entry")
        token_lists: list[list[str] | None] = (
            [list(t) for t in tokens] if tokens is not None else [None] * len(entries)
        )
        writer = current_actor()
        if writer is None or writer.kind != "extraction":
            writer = Actor("extraction", partition_key)
        async with self._writing(partition_key) as conn, conn.transaction():
            await act(conn, self.history, actor=writer)
            await conn.execute(query("auto_lock_partition"), partition_key)
            try:
                old = await conn.fetch(query("delete_auto_memories"), partition_key)
            except asyncpg.PostgresError as exc:
                raise_if_paused(exc, partition_key)
                raise
            gone = [r["id"] for r in old]
            old_by_text = {r["content"]: r["id"] for r in old}
            edges: list[tuple[Ref, Ref]] = []
            carried: list[tuple[str, str]] = []
            await self._gate(conn)  # before the removal and the inserts' hooks below
            if gone and self.backend.write_hooks:
                await self.backend.removed(gone)
            inserted_ids: list[str] = []
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
                written = memory_ref(partition_key, row["id"])
                if sources is not None:
                    edges.extend((written, s) for s in sources[len(inserted_ids)])
                inserted_ids.append(row["id"])
                if content in old_by_text:
                    carried.append((old_by_text.pop(content), row["id"]))
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
            await record_edges(conn, edges, made_by="extraction", cycle_id=None, now=now)
            await carry_lineage(conn, partition_key, carried)
            if before_commit is not None:
                await before_commit(conn)
        return len(gone), len(entries)

    async def clear(self, partition_key: str) -> int:
        """Delete every memory of the partition (a person's ``clear``); returns how many."""
        async with self._writing(partition_key) as conn, conn.transaction():
            await act(conn, self.history)
            gone = [r["id"] for r in await conn.fetch(query("clear_partition"), partition_key)]
            if gone:
                await self._gate(conn)
                await self.backend.removed(gone)
        return len(gone)

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
        whole table from the start and changes nothing, cursor included. A run that
        changed something ends with one trim of the history to the ``[trail]`` bounds.
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
            if not dry_run:
                metrics.record_sweep_batch(
                    row["scanned"], row["demoted"], row["purged"], row["kept"]
                )
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
        if not dry_run and (totals[1] or totals[2]):
            # The batches leave the history bounds to one set-wise trim per run (trim_history_v2).
            await self.pool.fetchrow(
                query("trim_history"), self.history.keep, self.history.keep_deleted_days
            )
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
