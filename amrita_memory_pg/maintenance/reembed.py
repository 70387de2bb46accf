"""Online, resumable re-embedding after an embedding-model change (reference §7.5, W7, W8).

New vectors are staged beside the live ones, ``REEMBED_BATCH_SIZE`` rows per
transaction, embedded *before* each transaction opens; retrieval keeps using the old
vectors meanwhile. A final transaction (``reembed_switch_v2``) swaps them in and
records the new fingerprint. A crash or an embedder outage loses at most the batch in
flight; running again resumes (staged rows are skipped). Knowledge-base vectors are
covered too, which the reference forgot.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.domain.ports import Embedder
from amrita_memory_pg.maintenance.ann import maintain_configured
from amrita_memory_pg.maintenance.backup import BackupInfo, create_backup
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.pg.timeouts import lift_statement_timeout
from amrita_memory_pg.storage.queries import query

log = logging.getLogger(__name__)

Kind = Literal["memory", "knowledge"]
#: called after each batch with (rows done in this run, rows pending at its start)
Progress = Callable[[int, int], None]
T = TypeVar("T")

#: A batch or the switch is one transaction: after a deadlock (40P01) or a serialization
#: failure (40001) PostgreSQL rolled all of it back, so running it again is safe.
RETRYABLE = (asyncpg.exceptions.DeadlockDetectedError, asyncpg.exceptions.SerializationError)
#: attempts per transaction before the error reaches the caller
TRANSACTION_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class ReindexReport:
    fingerprint: str
    #: rows embedded by this run
    embedded: int
    #: rows whose staged vector from an interrupted run was reused
    resumed: int
    memories: int
    knowledge: int
    dim: int | None


@dataclass(frozen=True, slots=True)
class ReindexState:
    """A re-embed in progress (``status`` shows it)."""

    target_fingerprint: str
    model: str | None
    staged: int
    pending: int
    started_at: datetime


async def reindex_state(pool: asyncpg.Pool) -> ReindexState | None:
    row = await pool.fetchrow(query("reembed_state"))
    if row is None:
        return None
    return ReindexState(
        target_fingerprint=row["target_fingerprint"],
        model=row["model"],
        staged=row["staged"],
        pending=row["pending"],
        started_at=row["started_at"],
    )


async def pending_count(pool: asyncpg.Pool, fingerprint: str) -> int:
    return int(await pool.fetchval(query("reembed_pending_count"), fingerprint))


async def in_retried_transaction(
    pool: asyncpg.Pool,
    work: Callable[[PoolConnectionProxy], Awaitable[T]],
    what: str,
    *,
    attempts: int = TRANSACTION_ATTEMPTS,
) -> T:
    """Run ``work`` in one transaction, again (bounded, logged) after a 40P01 or 40001.

    Why: the switch's lock order (reembed_switch_v2) rules out the deadlock seen in the
    load run, but a re-embed runs beside a live bot for minutes; one transient lock
    conflict must not make the whole run exit 70.
    """
    attempt = 1
    while True:
        try:
            async with pool.acquire() as conn, conn.transaction():
                return await work(conn)
        except RETRYABLE as exc:
            if attempt >= attempts:
                raise
            log.warning(
                "re-embed %s: %s (SQLSTATE %s); retrying (attempt %d of %d)",
                what,
                exc,
                exc.sqlstate,
                attempt + 1,
                attempts,
            )
            await asyncio.sleep(0.05 * attempt * (1 + random.random()))
            attempt += 1


async def _begin(pool: asyncpg.Pool, embedder: Embedder, now: datetime) -> int:
    """Register (or resume) the job; returns how many valid staged rows it starts with."""
    provider = embedder.provider
    target = embedder.fingerprint
    async with pool.acquire() as conn, conn.transaction():
        current = await conn.fetchval(query("reembed_job_target"))
        if current is not None and current != target:
            log.warning("discarding an unfinished re-embed toward another model (%s)", current)
            await conn.execute(query("reembed_discard_staging"))
        await conn.execute(
            query("reembed_register_job"),
            target,
            provider.protocol,
            provider.model,
            provider.base_url,
            now,
        )
        staged = await conn.fetchval(query("reembed_staged_count"), target)
    return int(staged)


async def _pending(
    pool: asyncpg.Pool, kind: Kind, fingerprint: str, after: str, limit: int
) -> list[asyncpg.Record]:
    """Up to ``limit`` rows of ``kind`` after ``after`` still to embed (row_id, body,
    updated_at, next_after: where the next page starts)."""
    if kind == "memory":
        return list(await pool.fetch(query("reembed_pending_memories"), fingerprint, after, limit))
    return list(await pool.fetch(query("reembed_pending_knowledge"), fingerprint, after, limit))


async def _stage_kind(
    pool: asyncpg.Pool,
    embedder: Embedder,
    kind: Kind,
    batch_size: int,
    on_batch: Callable[[int], None],
) -> int:
    """Embed and stage every pending row of one kind, one transaction per batch."""
    target = embedder.fingerprint
    after = ""
    done = 0
    while True:
        rows = await _pending(pool, kind, target, after, batch_size)
        if not rows:
            return done
        # Embedding first, outside any transaction: an outage here writes nothing.
        vectors = await embedder.embed_passages([r["body"] for r in rows])
        staged: list[tuple[Any, ...]] = [
            (kind, r["row_id"], target, v, r["updated_at"])
            for r, v in zip(rows, vectors, strict=True)
        ]

        async def stage(conn: PoolConnectionProxy, staged: list[tuple[Any, ...]] = staged) -> None:
            await conn.executemany(query("reembed_stage_vector"), staged)
            await conn.execute(query("reembed_touch_job"))

        await in_retried_transaction(pool, stage, f"{kind} batch")
        after = rows[-1]["next_after"]  # memories: 'partition_key/id'; knowledge: kid
        done += len(rows)
        on_batch(len(rows))


async def reindex(
    pool: asyncpg.Pool,
    embedder: Embedder,
    *,
    batch_size: int,
    progress: Progress | None = None,
    now: datetime | None = None,
    max_switch_attempts: int = 10,
) -> ReindexReport:
    """Re-embed every memory and knowledge entry with ``embedder`` and switch to it.

    Safe to run while the bot serves: writes that arrive meanwhile are staged on the next
    pass; the switch waits until nothing is pending (bounded attempts).
    """
    now = now or datetime.now(UTC)
    resumed = await _begin(pool, embedder, now)
    total = await pending_count(pool, embedder.fingerprint)
    done = 0

    def advance(n: int) -> None:
        nonlocal done, total
        done += n
        total = max(total, done)
        metrics.reembed_progress(n, total - done)
        if progress is not None:
            progress(done, total)

    metrics.reembed_progress(0, total)
    if progress is not None:
        progress(0, total)
    provider = embedder.provider
    for _attempt in range(max_switch_attempts):
        for kind in ("memory", "knowledge"):
            await _stage_kind(pool, embedder, kind, batch_size, advance)

        async def switch(conn: PoolConnectionProxy) -> asyncpg.Record | None:
            # One UPDATE over every row: longer than a chat statement may take.
            await lift_statement_timeout(conn)
            return await conn.fetchrow(
                query("reembed_switch"),
                embedder.fingerprint,
                provider.protocol,
                provider.model,
                provider.base_url,
                embedder.dim,
                datetime.now(UTC),
            )

        row = await in_retried_transaction(pool, switch, "switch")
        assert row is not None
        if row["switched"]:
            metrics.reembed_progress(0, 0)
            log.info(
                "re-embedded %d rows (%d resumed); now on %s", done, resumed, embedder.describe()
            )
            return ReindexReport(
                fingerprint=embedder.fingerprint,
                embedded=done,
                resumed=resumed,
                memories=row["memories"],
                knowledge=row["knowledge"],
                dim=row["dim"],
            )
        total += row["pending"]
    raise AmritaMemoryError(
        f"re-embed could not switch: writes kept arriving ({max_switch_attempts} attempts); run it again"
    )


async def write_fingerprint(
    pool: asyncpg.Pool, embedder: Embedder, *, dim: int | None = None
) -> None:
    """Record the configured model as the store's, without re-embedding (the escape hatch)."""
    await store_meta.write_embedder(pool, embedder, dim=dim)


async def after_model_change(store: Store) -> None:
    """After the vectors changed model: re-sync a secondary backend and rebuild ANN indexes."""
    rebuild = getattr(store.backend, "rebuild", None)
    if rebuild is not None:
        await rebuild(store.pool)
    await maintain_configured(store.pool, store.settings)


async def change_model(
    store: Store,
    *,
    backup: bool = True,
    on_backup: Callable[[BackupInfo], None] | None = None,
    progress: Progress | None = None,
) -> ReindexReport:
    """The one sequence of a model change: backup → re-embed → backend/ANN upkeep.

    Start-up (``EMBED_MISMATCH_POLICY=auto``/``ask``), ``amrita-memory reindex`` and a
    restore onto another model all run this; ``backup=False`` when the caller has just
    taken one (a restore's safety backup).
    """
    if backup:
        info = await create_backup(store, reason="before-reembed")
        if on_backup is not None:
            on_backup(info)
    report = await reindex(
        store.pool,
        store.embedder,
        batch_size=store.settings.embedding.reembed_batch_size,
        progress=progress,
    )
    await after_model_change(store)
    return report
