"""L2 memories: the repository every surface (tools, commands, CLI, L3) goes through.

Texts are embedded before any transaction or lock; the partition cap is checked in the
same transaction as the insert (``amrita_memory.insert_memory_v1``); retrieval is one
SQL statement that scores by similarity × time decay; the sweep is set-based SQL in
batches with a persisted cursor. All methods take ``now`` (default: the current UTC
time) so that tests and the L3 loop control the clock.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import asyncpg

from amrita_memory_pg.domain.importance import level_to_label
from amrita_memory_pg.errors import AmritaMemoryError

if TYPE_CHECKING:
    from amrita_memory_pg.embedding.base import Embedder
    from amrita_memory_pg.settings import Settings
    from amrita_memory_pg.storage.index import VectorIndex

Scope = Literal["user", "group", "global"]
Category = Literal["preference", "rule", "event", "knowledge"]
Source = Literal["user", "auto", "system"]


class FingerprintMismatch(AmritaMemoryError):
    """The store's vectors come from another embedding model than the configured one."""


class PartitionFull(AmritaMemoryError):
    """The partition already holds ``per_session_memory_limit`` memories."""

    def __init__(self, partition_key: str, limit: int) -> None:
        super().__init__(f"partition {partition_key} is at its limit of {limit} memories")
        self.partition_key = partition_key
        self.limit = limit


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    id: str
    partition_key: str
    scope: Scope
    content: str
    tags: tuple[str, ...]
    importance: int
    category: Category | None
    source: Source
    author: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def importance_label(self) -> str:
        return level_to_label(self.importance)

    @property
    def tags_text(self) -> str:
        """Tags as the reference's single comma-separated string."""
        return ",".join(self.tags)


@dataclass(frozen=True, slots=True)
class SearchHit:
    record: MemoryRecord
    #: squared L2 distance, as Chroma reports it (so reference numbers match)
    distance: float
    #: similarity × decay factor (just the similarity when decay is disabled); the ranking key
    decay_score: float
    age_days: float


@dataclass(frozen=True, slots=True)
class SweepReport:
    scanned: int
    demoted: int
    purged: int
    kept: int
    #: True when the persisted cursor wrapped around to the start of the table
    wrapped: bool = False


def parse_tags(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """The reference stores tags as one free string; we keep them as a set of trimmed words.

    ``"preference, project，编程"`` → ``("preference", "project", "编程")`` (ASCII and
    full-width commas, order kept, duplicates and empties dropped).
    """
    if value is None:
        return ()
    parts = value.replace("，", ",").split(",") if isinstance(value, str) else list(value)
    seen: dict[str, None] = {}
    for part in parts:
        tag = str(part).strip()
        if tag:
            seen.setdefault(tag, None)
    return tuple(seen)


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


_COLUMNS = "id, partition_key, scope, content, tags, importance, category, source, author, created_at, updated_at"


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _transaction(conn: Any, explicit: bool) -> contextlib.AbstractAsyncContextManager[Any]:
    return conn.transaction() if explicit else contextlib.nullcontext()


class MemoryStore:
    """Repository of L2 memories on one pool, one embedder and one vector index."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        embedder: Embedder,
        index: VectorIndex,
        settings: Settings,
    ) -> None:
        self.pool = pool
        self.embedder = embedder
        self.index = index
        self.settings = settings

    # ------------------------------------------------------------------ writes

    async def add(
        self,
        *,
        partition_key: str,
        scope: Scope,
        content: str,
        tags: Sequence[str] = (),
        importance: int = 5,
        category: Category | None = None,
        source: Source = "auto",
        author: str | None = None,
        now: datetime | None = None,
    ) -> MemoryRecord:
        """Embed, then insert under the partition cap; raises :class:`PartitionFull`.

        The embedding happens first, outside any transaction: if it fails, nothing is
        written and no lock was ever taken.
        """
        now = now or _utcnow()
        (vector,) = await self.embedder.embed_passages([content])
        provider = self.embedder.provider
        cap = self.settings.per_session_memory_limit
        # insert_memory_v1 is one statement, hence its own transaction: the cap's advisory
        # lock lasts until its commit. Only a backend with write hooks (chroma) needs an
        # explicit transaction around insert + hook — three round trips instead of one.
        async with self.pool.acquire() as conn, _transaction(conn, self.index.write_hooks):
            try:
                row = await conn.fetchrow(
                    "SELECT * FROM amrita_memory.insert_memory_v1("
                    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
                    partition_key,
                    scope,
                    content,
                    list(tags),
                    importance,
                    category,
                    source,
                    author,
                    vector,
                    self.embedder.fingerprint,
                    now,
                    cap,
                    provider.protocol,
                    provider.model,
                    provider.base_url,
                )
            except asyncpg.PostgresError as exc:
                if getattr(exc, "sqlstate", None) == "AMF01":
                    raise FingerprintMismatch(str(exc)) from exc
                raise
            assert row is not None
            if row["id"] is None:
                raise PartitionFull(partition_key, cap)
            record = MemoryRecord(
                id=row["id"],
                partition_key=partition_key,
                scope=scope,
                content=content,
                tags=tuple(tags),
                importance=importance,
                category=category,
                source=source,
                author=author,
                created_at=now,
                updated_at=now,
            )
            # Inside the transaction: if a secondary index refuses it, the insert rolls back.
            if self.index.write_hooks:
                await self.index.added(record, vector)
        return record

    async def update(
        self,
        partition_key: str,
        memory_id: str,
        *,
        content: str | None = None,
        tags: Sequence[str] | None = None,
        importance: int | None = None,
        category: Category | None = None,
        now: datetime | None = None,
    ) -> MemoryRecord | None:
        """Change some fields; the vector is recomputed only when the content changes.

        ``created_at`` is kept (the memory's age); a change of importance *tier* restarts
        the sweep's clock (``tier_since``). None when the id is not in the partition.
        """
        now = now or _utcnow()
        current = await self.get(partition_key, memory_id)
        if current is None:
            return None
        vector = None
        if content is not None and content != current.content:
            (vector,) = await self.embedder.embed_passages([content])
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                f"""
                UPDATE amrita_memory.memory m
                   SET content = coalesce($3, m.content),
                       tags = coalesce($4, m.tags),
                       importance = coalesce($5, m.importance),
                       category = CASE WHEN $6::boolean THEN $7 ELSE m.category END,
                       embedding = coalesce($8, m.embedding),
                       embed_fingerprint = CASE WHEN $8 IS NULL THEN m.embed_fingerprint ELSE $9 END,
                       tier_since = CASE
                           WHEN $5 IS NOT NULL AND amrita_memory.importance_rank_v1($5)
                                <> amrita_memory.importance_rank_v1(m.importance) THEN $10
                           ELSE m.tier_since END,
                       updated_at = $10
                 WHERE m.partition_key = $1 AND m.id = $2
                RETURNING {_COLUMNS}
                """,
                partition_key,
                memory_id,
                content if vector is not None else None,
                list(tags) if tags is not None else None,
                importance,
                category is not None,
                category,
                vector,
                self.embedder.fingerprint,
                now,
            )
            if row is None:
                return None
            record = record_from_row(row)
            await self.index.updated(record, vector)
        return record

    async def delete(self, partition_key: str, memory_id: str) -> bool:
        """Delete one memory of the partition; a foreign or unknown id deletes nothing."""
        async with self.pool.acquire() as conn, conn.transaction():
            deleted = await conn.fetchval(
                "DELETE FROM amrita_memory.memory WHERE partition_key = $1 AND id = $2 RETURNING id",
                partition_key,
                memory_id,
            )
            if deleted is None:
                return False
            await self.index.removed([deleted])
        return True

    # ------------------------------------------------------------------ reads

    async def get(self, partition_key: str, memory_id: str) -> MemoryRecord | None:
        row = await self.pool.fetchrow(
            f"SELECT {_COLUMNS} FROM amrita_memory.memory WHERE partition_key = $1 AND id = $2",
            partition_key,
            memory_id,
        )
        return None if row is None else record_from_row(row)

    async def count(self, partition_key: str) -> int:
        value = await self.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1", partition_key
        )
        return int(value)

    async def list_page(
        self, partition_key: str, *, limit: int, offset: int = 0
    ) -> tuple[list[MemoryRecord], int]:
        """One page in (created_at, id) order — deterministic (reference W6) — and the total."""
        rows = await self.pool.fetch(
            f"""
            SELECT {_COLUMNS}, count(*) OVER () AS total
              FROM amrita_memory.memory
             WHERE partition_key = $1
             ORDER BY created_at, id
             LIMIT $2 OFFSET $3
            """,
            partition_key,
            limit,
            offset,
        )
        if rows:
            return [record_from_row(r) for r in rows], int(rows[0]["total"])
        return [], await self.count(partition_key) if offset else 0

    async def find_by_prefix(self, partition_key: str, prefix: str) -> list[MemoryRecord]:
        """Exact id first; otherwise every id of the partition starting with ``prefix``."""
        exact = await self.get(partition_key, prefix)
        if exact is not None:
            return [exact]
        if not prefix:
            return []
        rows = await self.pool.fetch(
            f"""
            SELECT {_COLUMNS} FROM amrita_memory.memory
             WHERE partition_key = $1 AND left(id, length($2)) = $2
             ORDER BY created_at, id
            """,
            partition_key,
            prefix,
        )
        return [record_from_row(r) for r in rows]

    async def search(
        self,
        partition_key: str,
        query: str,
        *,
        top_k: int = 5,
        importance: tuple[int, int] | None = None,
        scope: Scope | None = None,
        tags: Sequence[str] | None = None,
        now: datetime | None = None,
    ) -> list[SearchHit]:
        """The true top_k by decay score (by distance when decay is disabled)."""
        from amrita_memory_pg.storage.index import SearchFilter

        vector = await self.embedder.embed_query(query)
        where = SearchFilter(
            importance_min=importance[0] if importance else None,
            importance_max=importance[1] if importance else None,
            scope=scope,
            tags=tuple(tags) if tags else None,
        )
        try:
            return await self.index.search(
                self.pool,
                partition_key,
                vector,
                top_k=top_k,
                where=where,
                now=now or _utcnow(),
                decay=self.settings.decay,
            )
        except asyncpg.DataError as exc:
            if "different vector dimensions" not in str(exc):
                raise
            raise FingerprintMismatch(
                f"the stored vectors and the configured model ({self.embedder.describe()}, "
                f"dimension {len(vector)}) differ: the embedding model changed — run "
                "`amrita-memory reindex`, or configure the model the store was built with"
            ) from exc

    # ------------------------------------------------------------------ sweep

    async def sweep(
        self,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        max_batches: int | None = None,
        force: bool = False,
    ) -> SweepReport:
        """Demote/purge what outlived its tier (reference §5.2), batch by batch.

        A run starts at the persisted cursor and walks to the end of the table, then from
        the start back to where it began: one full pass, each batch its own transaction.
        ``max_batches`` stops early (the cursor remembers where); ``dry_run`` walks the
        whole table from the start and changes nothing, cursor included. Disabled by
        ``[decay] enabled/sweep_enabled = false`` unless ``force``.
        """
        decay = self.settings.decay
        if not force and not (decay.enabled and decay.sweep_enabled):
            return SweepReport(scanned=0, demoted=0, purged=0, kept=0)
        now = now or _utcnow()
        args = (
            now,
            float(decay.short_term_days),
            float(decay.long_term_days),
            decay.sweep_batch_limit,
            decay.restart_clock_on_demote,
        )
        totals = [0, 0, 0, 0]
        batches = 0
        wrapped = False
        # A dry run walks the whole table from the start with an explicit cursor and
        # persists nothing; a real run starts at the persisted cursor (NULL = use it).
        cursor: str | None = "" if dry_run else None
        start = None
        if not dry_run:
            start = await self.pool.fetchval(
                "SELECT cursor_id FROM amrita_memory.sweep_state WHERE id = 1"
            )
        until: str | None = None
        while max_batches is None or batches < max_batches:
            row = await self.pool.fetchrow(
                "SELECT * FROM amrita_memory.sweep_batch_v1($1, $2, $3, $4, $5, $6, $7, $8)",
                *args,
                dry_run,
                cursor,
                until,
            )
            assert row is not None
            batches += 1
            self._accumulate(totals, row)
            if row["purged_ids"] and not dry_run:
                await self.index.removed(list(row["purged_ids"]))
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


@dataclass(frozen=True, slots=True)
class AnnReport:
    built: list[str]
    dropped: list[str]
    kept: list[str]


ANN_INDEX_PREFIX = "ix_memory_ann_"


async def maintain_ann_indexes(
    pool: asyncpg.Pool, *, min_rows: int, m: int = 16, ef_construction: int = 64
) -> AnnReport:
    """Give every partition of ``min_rows`` or more its own partial HNSW index, and drop
    the indexes of partitions that shrank below half of that (hysteresis).

    Why per partition: an HNSW index over the whole table makes every write and sweep
    pay for the graph, and a partition filter on a shared graph misses results. A
    partial index whose predicate names one partition (and one dimension, so vectors of
    another model never reach its ``::vector(n)`` cast) is searched exactly where it
    helps. Built CONCURRENTLY: writes go on meanwhile. Recorded in ``ann_index``, which
    ``search_memories_v1`` consults.
    """
    async with pool.acquire() as conn:
        sizes = await conn.fetch(
            """
            SELECT partition_key, vector_dims(embedding) AS dim, count(*)::integer AS n
              FROM amrita_memory.memory
             GROUP BY 1, 2
            """
        )
        existing = {
            (r["partition_key"], r["dim"]): r["index_name"]
            for r in await conn.fetch(
                "SELECT partition_key, dim, index_name FROM amrita_memory.ann_index"
            )
        }
        size_of = {(r["partition_key"], r["dim"]): r["n"] for r in sizes}
        report = AnnReport(built=[], dropped=[], kept=[])
        for key, name in sorted(existing.items()):
            if size_of.get(key, 0) < min_rows // 2:
                await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS amrita_memory.{name}")
                await conn.execute(
                    "DELETE FROM amrita_memory.ann_index WHERE partition_key = $1 AND dim = $2",
                    *key,
                )
                report.dropped.append(name)
            else:
                report.kept.append(name)
        for (partition, dim), n in sorted(size_of.items()):
            if n < min_rows or (partition, dim) in existing:
                continue
            name = ANN_INDEX_PREFIX + hashlib.md5(f"{partition}|{dim}".encode()).hexdigest()[:24]
            # A failed CONCURRENTLY build leaves an INVALID index behind: clear it first.
            await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS amrita_memory.{name}")
            ddl = await conn.fetchval(
                """
                SELECT format(
                    'CREATE INDEX CONCURRENTLY %I ON amrita_memory.memory USING hnsw '
                    '((embedding::vector(%s)) vector_l2_ops) WITH (m = %s, ef_construction = %s) '
                    'WHERE partition_key = %L AND vector_dims(embedding) = %s',
                    $1::text, $2::integer, $3::integer, $4::integer, $5::text, $2::integer)
                """,
                name,
                dim,
                m,
                ef_construction,
                partition,
            )
            await conn.execute(ddl)
            await conn.execute(
                "INSERT INTO amrita_memory.ann_index (partition_key, dim, index_name, rows_at_build) "
                "VALUES ($1, $2, $3, $4) ON CONFLICT (partition_key, dim) DO NOTHING",
                partition,
                dim,
                name,
                n,
            )
            report.built.append(name)
        return report
