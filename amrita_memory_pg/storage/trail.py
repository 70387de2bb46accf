"""The memory's trail in PostgreSQL: the access log, the change
history and paused partitions. The statements are the named queries of
``sql/queries/trail.sql``; the history itself is written by the triggers of
``sql/functions/trail.sql`` from what :func:`act` puts in the writing transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from amrita_memory_pg.domain.errors import MemoryPaused
from amrita_memory_pg.domain.trail import (
    AUTOMATIC_KINDS,
    AccessEntry,
    Actor,
    ChangeEntry,
    Recall,
    current_actor,
    parse_actor,
    redacted_fields,
)
from amrita_memory_pg.storage.queries import query

#: SQLSTATE of an automatic write to a paused partition (trail.sql, pause.sql)
PAUSED = "AMZ01"


def raise_if_paused(exc: asyncpg.PostgresError, partition_key: str) -> None:
    """Raise :class:`MemoryPaused` from an automatic write refused on a paused partition
    (SQLSTATE AMZ01: the memory, memo and profile triggers); return otherwise."""
    if exc.sqlstate == PAUSED:
        raise MemoryPaused(partition_key) from exc


@dataclass(frozen=True, slots=True)
class HistoryBounds:
    """``[trail]`` history_per_memory / history_keep_deleted_days, handed to the trigger."""

    keep: int = 20
    keep_deleted_days: int = 30


DEFAULT_BOUNDS = HistoryBounds()


def refusable() -> bool:
    """Whether the task's writer is one a pause refuses (llm, extraction, l3): only then
    must a memo or profile write tell the database who it is (pause.sql)."""
    who = current_actor()
    return who is not None and who.kind in AUTOMATIC_KINDS


def acts(
    bounds: HistoryBounds = DEFAULT_BOUNDS, *, op: str | None = None, note: str | None = None
) -> bool:
    """Whether :func:`act` has anything to tell the triggers (else it sends nothing)."""
    return not (
        current_actor() is None and op is None and note is None and bounds == DEFAULT_BOUNDS
    )


async def act(
    conn: Any,
    bounds: HistoryBounds = DEFAULT_BOUNDS,
    *,
    op: str | None = None,
    note: str | None = None,
    actor: Actor | None = None,
) -> None:
    """Tell the history triggers who writes in ``conn``'s open transaction (the task's
    :func:`~amrita_memory_pg.domain.trail.acting` actor unless given). Skipped — one
    round trip saved — when nothing differs from the triggers' defaults (system, no op,
    default bounds)."""
    who = actor or current_actor()
    if actor is None and not acts(bounds, op=op, note=note):
        return
    await conn.fetchrow(
        query("trail_act"),
        who.setting() if who else "system:",
        op or "",
        note or "",
        bounds.keep,
        bounds.keep_deleted_days,
    )


@dataclass(frozen=True, slots=True)
class PauseState:
    partition_key: str
    paused_at: datetime
    paused_by: str
    reason: str | None


def _fields(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    loaded = json.loads(value) if isinstance(value, str) else value
    return dict(loaded)


class TrailRepository:
    """Reads and writes the trail tables on one pool; the lists people read (a memory's
    access log and history) on ``read_pool`` (a replica when configured). The paused list stays
    on the primary: a person who just paused a partition sees it listed."""

    def __init__(self, pool: asyncpg.Pool, read_pool: asyncpg.Pool | None = None) -> None:
        self.pool = pool
        self.read_pool = read_pool if read_pool is not None else pool

    # ------------------------------------------------------------------ recalls

    async def recall(
        self,
        partition_key: str,
        ids: Sequence[str],
        scores: Sequence[float | None],
        *,
        at: datetime,
        recall: Recall,
        query_text: str | None,
        keep: int,
        log: bool,
    ) -> bool:
        """After a search of one partition: True when it is paused (nothing logged),
        else log the hits when ``log``. One statement."""
        return bool(
            await self.pool.fetchval(
                query("trail_recall"),
                partition_key,
                list(ids),
                list(scores),
                at,
                recall.chat_key,
                recall.who,
                query_text,
                recall.surface,
                keep,
                log,
            )
        )

    async def log_access(
        self,
        partitions: Sequence[str],
        ids: Sequence[str],
        scores: Sequence[float | None] | None,
        *,
        at: datetime,
        recall: Recall,
        query_text: str | None,
        keep: int,
    ) -> int:
        """Log memories of several partitions (an injected block); returns rows written."""
        if not ids:
            return 0
        return int(
            await self.pool.fetchval(
                query("trail_log_access"),
                list(partitions),
                list(ids),
                None if scores is None else list(scores),
                at,
                recall.chat_key,
                recall.who,
                query_text,
                recall.surface,
                keep,
            )
        )

    async def access_log(
        self, partition_key: str, memory_id: str, limit: int = 50
    ) -> list[AccessEntry]:
        rows = await self.read_pool.fetch(
            query("trail_access_log"), partition_key, memory_id, limit
        )
        return [
            AccessEntry(
                partition_key=r["partition_key"],
                memory_id=r["memory_id"],
                seq=int(r["seq"]),
                at=r["at"],
                surface=r["surface"],
                chat_key=r["chat_key"],
                who=r["who"],
                query=r["query"],
                score=None if r["score"] is None else float(r["score"]),
            )
            for r in rows
        ]

    async def history(
        self, partition_key: str, memory_id: str, limit: int = 50
    ) -> list[ChangeEntry]:
        rows = await self.read_pool.fetch(
            query("trail_change_history"), partition_key, memory_id, limit
        )
        return [
            ChangeEntry(
                partition_key=r["partition_key"],
                memory_id=r["memory_id"],
                seq=int(r["seq"]),
                at=r["at"],
                actor=parse_actor(f"{r['actor_kind']}:{r['actor_id'] or ''}"),
                op=r["op"],
                before=redacted_fields(_fields(r["before"])),
                after=redacted_fields(_fields(r["after"])),
                note=r["note"],
            )
            for r in rows
        ]

    # ------------------------------------------------------------------ pause

    async def paused_among(self, keys: Sequence[str]) -> frozenset[str]:
        if not keys:
            return frozenset()
        value = await self.pool.fetchval(query("trail_paused_among"), list(dict.fromkeys(keys)))
        return frozenset(value or ())

    async def pause(
        self, partition_key: str, *, by: str, at: datetime, reason: str | None = None
    ) -> bool:
        """Pause a partition; False when it already was."""
        row = await self.pool.fetchrow(query("trail_pause"), partition_key, at, by, reason)
        return row is not None

    async def resume(self, partition_key: str) -> bool:
        """Resume a partition; False when it was not paused."""
        return await self.pool.fetchval(query("trail_resume"), partition_key) is not None

    async def state(self, partition_key: str) -> PauseState | None:
        row = await self.pool.fetchrow(query("trail_pause_state"), partition_key)
        return None if row is None else PauseState(**dict(row.items()))

    async def paused(self) -> list[PauseState]:
        return [
            PauseState(**dict(r.items())) for r in await self.pool.fetch(query("trail_paused_list"))
        ]
