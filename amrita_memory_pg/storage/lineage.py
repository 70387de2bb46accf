"""Lineage in PostgreSQL: edges recorded in the writer's transaction, the walks both ways,
the withheld rows' tasks and the erasure ledger (``sql/queries/lineage.sql``, the
functions of ``sql/functions/lineage.sql``).

The writes that remove rows — a delete's or forget's cascade, an erasure — live with the
memories (``storage/memory_forget.py``): they must tell the vector index what left."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from amrita_memory_pg.domain.lineage import (
    Candidate,
    Derivation,
    DerivedKind,
    Ref,
    current_derivation,
    memory_ref,
    text_refs,
)
from amrita_memory_pg.storage.pg.outcome import write_connection
from amrita_memory_pg.storage.queries import query


async def record_edges(
    conn: Any,
    edges: Sequence[tuple[Ref, Ref]],
    *,
    made_by: str,
    cycle_id: int | None,
    now: datetime,
) -> None:
    """Record (derived, source) edges on ``conn``, in the caller's transaction."""
    if not edges:
        return
    await conn.execute(
        query("lineage_record"),
        [d.kind for d, _ in edges],
        [d.key for d, _ in edges],
        [d.id for d, _ in edges],
        [s.kind for _, s in edges],
        [s.key for _, s in edges],
        [s.id for _, s in edges],
        made_by,
        cycle_id,
        now,
    )


async def _memories(conn: Any, derivation: Derivation) -> list[Candidate]:
    """The memories of the derivation's partition, read in the writer's transaction."""
    if derivation.partition_key is None or not derivation.infer:
        return []
    rows = await conn.fetch(query("lineage_candidates"), derivation.partition_key)
    return [Candidate(memory_ref(derivation.partition_key, r["id"]), r["content"]) for r in rows]


async def record_derived(
    conn: Any, derived: Ref, text: str, now: datetime, *, own_earlier_text: bool = False
) -> None:
    """Record what ``derived`` (a memory or knowledge entry just written with ``text``) was
    made from, when the task derives (:func:`~amrita_memory_pg.domain.lineage.deriving`),
    in the caller's transaction. ``own_earlier_text``: a rewrite, made also from the row's
    own text before (a self-edge)."""
    found = current_derivation()
    if found is None:
        return
    sources = found.sources(text, await _memories(conn, found), exclude=derived)
    if own_earlier_text:
        sources = (*sources, derived)
    await record_edges(
        conn,
        [(derived, s) for s in sources],
        made_by=found.made_by,
        cycle_id=found.cycle_id,
        now=now,
    )


async def record_texts(
    conn: Any, kind: DerivedKind, key: str, texts: Iterable[str], now: datetime
) -> None:
    """Record what each of ``texts`` (new profile lines, a summary, memo sentences written
    to partition ``key``) was made from, when the task derives, in the caller's
    transaction."""
    found = current_derivation()
    if found is None:
        return
    named = text_refs(kind, key, texts)
    if not named:
        return
    memories = await _memories(conn, found)
    edges = [(ref, s) for ref, text in named for s in found.sources(text, memories)]
    await record_edges(conn, edges, made_by=found.made_by, cycle_id=found.cycle_id, now=now)


def deriving_now() -> bool:
    """Whether a write now must record lineage (an explicit transaction around it)."""
    return current_derivation() is not None


async def carry_lineage(conn: Any, partition_key: str, pairs: Sequence[tuple[str, str]]) -> int:
    """Memories replaced by rows with the same text (an extraction's rerun): the new rows
    take the old ones' sources, and what was made from the old is made from the new."""
    if not pairs:
        return 0
    moved: int = await conn.fetchval(
        query("lineage_carry"),
        partition_key,
        [old for old, _ in pairs],
        [new for _, new in pairs],
    )
    return moved


@dataclass(frozen=True, slots=True)
class LineageRow:
    """One row of a walk: how far, which row, who made the edge, whether it still exists."""

    depth: int
    ref: Ref
    made_by: str
    cycle_id: int | None
    made_at: datetime
    present: bool
    body: str | None


@dataclass(frozen=True, slots=True)
class RederiveTask:
    """A row a forget or change withheld, for the partition's loop to write again."""

    partition_key: str
    id: int
    kind: str
    row_key: str
    row_id: str
    #: the row as it was (None after an erasure: no content kept)
    held: dict[str, Any] | None
    sources: tuple[Ref, ...]
    #: what to leave out ("was") or take in ("now")
    about: tuple[dict[str, Any], ...]
    reason: str
    created_at: datetime
    claimed_by_cycle: int | None = None

    @property
    def held_text(self) -> str:
        """The withheld row's text as the loop reads it ('' when none was kept)."""
        held = self.held or {}
        if "content" in held:
            return str(held["content"])
        if "title" in held:
            return f"{held.get('title', '')}：{held.get('summary', '')}\n{held.get('body', '')}".strip()
        return str(held.get("text", ""))


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _task(row: asyncpg.Record, partition_key: str | None = None) -> RederiveTask:
    return RederiveTask(
        partition_key=partition_key or row["partition_key"],
        id=row["id"],
        kind=row["kind"],
        row_key=row["row_key"],
        row_id=row["row_id"],
        held=_json(row["held"]),
        sources=tuple(Ref.from_json(s) for s in _json(row["sources"]) or ()),
        about=tuple(_json(row["about"]) or ()),
        reason=row["reason"],
        created_at=row["created_at"],
        claimed_by_cycle=row.get("claimed_by_cycle"),
    )


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One forget or erasure as the ledger keeps it (no content)."""

    id: int
    at: datetime
    kind: str
    subject: str
    memories: int
    chat_lines: int
    requested_by: str
    counts: dict[str, int]


class LineageRepository:
    """Walks, tasks and the ledger on one pool."""

    def __init__(self, pool: asyncpg.Pool, *, acquire_timeout: float | None = None) -> None:
        self.pool = pool
        self.acquire_timeout = acquire_timeout

    # ------------------------------------------------------------------ walks

    @staticmethod
    def _rows(rows: Sequence[asyncpg.Record]) -> list[LineageRow]:
        return [
            LineageRow(
                depth=r["depth"],
                ref=Ref(r["kind"], r["row_key"], r["row_id"]),
                made_by=r["made_by"],
                cycle_id=r["cycle_id"],
                made_at=r["made_at"],
                present=r["present"],
                body=r["body"],
            )
            for r in rows
        ]

    async def made_from(self, ref: Ref) -> list[LineageRow]:
        """What ``ref`` was made from, transitively (nearest first)."""
        return self._rows(
            await self.pool.fetch(query("lineage_made_from"), ref.kind, ref.key, ref.id)
        )

    async def used_by(self, ref: Ref) -> list[LineageRow]:
        """What was made from ``ref``, transitively (nearest first)."""
        return self._rows(
            await self.pool.fetch(query("lineage_used_by"), ref.kind, ref.key, ref.id)
        )

    async def counts(self, partition_key: str, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(made from, used by) direct edge counts of memories ``ids``."""
        if not ids:
            return {}
        rows = await self.pool.fetch(query("lineage_counts"), partition_key, list(ids))
        return {r["id"]: (r["made_from"], r["used_by"]) for r in rows}

    async def source_texts(self, refs: Sequence[Ref]) -> list[tuple[Ref, str]]:
        """The texts of ``refs`` that still exist, in order."""
        if not refs:
            return []
        rows = await self.pool.fetch(
            query("source_texts"),
            [r.kind for r in refs],
            [r.key for r in refs],
            [r.id for r in refs],
        )
        return [
            (Ref(r["kind"], r["key"], r["id"]), r["body"]) for r in rows if r["body"] is not None
        ]

    # ------------------------------------------------------------------ tasks

    async def claim_tasks(
        self, partition_key: str, cycle_id: int, now: datetime, *, stale: datetime, limit: int
    ) -> list[RederiveTask]:
        async with write_connection(self.pool, acquire_timeout=self.acquire_timeout) as conn:
            rows = await conn.fetch(
                query("rederive_claim"), partition_key, cycle_id, now, stale, limit
            )
        return sorted((_task(r, partition_key) for r in rows), key=lambda t: t.id)

    async def release_tasks(self, cycle_id: int) -> None:
        """The tasks cycle ``cycle_id`` claimed and did not finish go back to the queue."""
        async with write_connection(self.pool, acquire_timeout=self.acquire_timeout) as conn:
            await conn.execute(query("rederive_release"), cycle_id)

    async def task(self, partition_key: str, task_id: int) -> RederiveTask | None:
        row = await self.pool.fetchrow(query("rederive_get"), partition_key, task_id)
        return _task(row, partition_key) if row is not None else None

    async def finish(self, partition_key: str, task_id: int) -> bool:
        """Task ``task_id`` is done (the row written again, or dropped): it goes, with the
        content it held; False when it was gone already."""
        async with write_connection(self.pool, acquire_timeout=self.acquire_timeout) as conn:
            done = await conn.fetchval(query("rederive_done"), partition_key, task_id)
        return done is not None

    async def pending(self, partition_key: str | None, limit: int = 100) -> list[RederiveTask]:
        rows = await self.pool.fetch(query("rederive_pending"), partition_key, limit)
        return [_task(r) for r in rows]

    async def waiting(self, partition_key: str) -> int:
        count: int = await self.pool.fetchval(query("rederive_count"), partition_key)
        return count

    # ------------------------------------------------------------------ ledger

    async def ledger(self, limit: int = 100) -> list[LedgerEntry]:
        rows = await self.pool.fetch(query("erasure_ledger"), limit)
        return [
            LedgerEntry(
                id=r["id"],
                at=r["at"],
                kind=r["kind"],
                subject=r["subject"],
                memories=r["memories"],
                chat_lines=r["chat_lines"],
                requested_by=r["requested_by"],
                counts={k: int(v) for k, v in (_json(r["counts"]) or {}).items()},
            )
            for r in rows
        ]


async def ledger_rows(conn: Any) -> list[dict[str, Any]]:
    """Every ledger row as JSON objects (kept across a restore's load)."""
    value = await conn.fetchval(query("erasure_ledger_rows"))
    rows: list[dict[str, Any]] = _json(value) or []
    return rows


async def merge_ledger(conn: Any, rows: Sequence[dict[str, Any]]) -> int:
    """Put ledger rows back after a load; returns the rows added."""
    if not rows:
        return 0
    added: int = await conn.fetchval(
        query("erasure_ledger_merge"), json.dumps(list(rows), ensure_ascii=False)
    )
    return added


async def apply_ledger(conn: Any, now: datetime) -> dict[int, tuple[str, int]]:
    """Apply the ledger to what a restore loaded: ledger id → (kind, rows removed)."""
    rows = await conn.fetch(query("erasure_ledger_apply"), now)
    return {r["ledger_id"]: (r["kind"], r["removed"]) for r in rows}
