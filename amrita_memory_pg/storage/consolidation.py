"""L3 runs in PostgreSQL: cycles, the tokens of each LLM call, pending proactive messages,
the near-duplicate pre-pass (``duplicate_pairs_v1``) and the knowledge candidates
(``knowledge_candidates_v1``).

Each method is one named query of ``sql/queries/consolidation.sql`` and its own
transaction, so a cycle that dies halfway leaves every row it wrote consistent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from amrita_memory_pg.domain.records import MemoryRecord
from amrita_memory_pg.storage.memories import record_from_row
from amrita_memory_pg.storage.queries import query


@dataclass(frozen=True, slots=True)
class LastRun:
    """The newest finished (not dry-run) cycle of a target."""

    cycle_id: int
    ended_at: datetime
    ok: bool
    summary: str | None


@dataclass(frozen=True, slots=True)
class PendingMessage:
    id: int
    content: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class KnowledgeCandidate:
    """A memory the loop may distil into the knowledge base (``knowledge_candidates_v1``)."""

    id: str
    content: str
    importance: int
    category: str | None
    #: how many other partitions hold the same fact (as category knowledge)
    partitions: int


@dataclass(frozen=True, slots=True)
class PartitionStats:
    total: int
    low: int
    oldest: datetime | None
    newest: datetime | None
    avg_length: int


@dataclass(frozen=True, slots=True)
class CycleRow:
    """One L3 cycle as a run list shows it (``ended_at``/``ok`` None while it runs)."""

    target_key: str
    id: int
    trigger: str
    started_at: datetime
    ended_at: datetime | None
    ok: bool | None
    error: str | None
    iterations: int
    tool_calls: int
    memories_changed: int
    prompt_tokens: int
    completion_tokens: int
    summary: str | None
    dry_run: bool

    @property
    def outcome(self) -> str:
        """running | ok | failed (dry runs say so too)."""
        word = "running" if self.ok is None else ("ok" if self.ok else "failed")
        return f"{word} (dry run)" if self.dry_run else word


class ConsolidationRepository:
    """The L3 tables on one pool."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    # ------------------------------------------------------------------ cycles
    async def start_cycle(
        self, target_key: str, *, trigger: str, now: datetime, dry_run: bool
    ) -> int:
        return int(
            await self._pool.fetchval(query("start_cycle"), target_key, trigger, now, dry_run)
        )

    async def finish_cycle(
        self,
        target_key: str,
        cycle_id: int,
        *,
        now: datetime,
        ok: bool,
        error: str | None,
        iterations: int,
        tool_calls: int,
        memories_changed: int,
        summary: str | None,
    ) -> tuple[int, int]:
        """Close the cycle; returns its (prompt, completion) token totals."""
        row = await self._pool.fetchrow(
            query("finish_cycle"),
            target_key,
            cycle_id,
            now,
            ok,
            error,
            iterations,
            tool_calls,
            memories_changed,
            summary,
        )
        if row is None:
            return 0, 0
        return int(row["prompt_tokens"]), int(row["completion_tokens"])

    async def record_usage(
        self,
        target_key: str,
        cycle_id: int,
        *,
        purpose: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        now: datetime,
    ) -> None:
        await self._pool.execute(
            query("record_token_usage"),
            target_key,
            cycle_id,
            purpose,
            model,
            prompt_tokens,
            completion_tokens,
            now,
        )

    async def last_run(self, target_key: str) -> LastRun | None:
        row = await self._pool.fetchrow(query("last_finished_cycle"), target_key)
        if row is None:
            return None
        return LastRun(row["id"], row["ended_at"], bool(row["ok"]), row["summary"])

    async def recent_runs(self, target_key: str, limit: int) -> list[LastRun]:
        """The newest ``limit`` finished cycles with a summary (their abstracts)."""
        rows = await self._pool.fetch(query("recent_cycles"), target_key, limit)
        return [LastRun(r["id"], r["ended_at"], bool(r["ok"]), r["summary"]) for r in rows]

    async def get_cycle(self, target_key: str, cycle_id: int) -> dict[str, Any] | None:
        row = await self._pool.fetchrow(query("get_cycle"), target_key, cycle_id)
        return None if row is None else dict(row.items())

    async def cycles(
        self, target_key: str | None, limit: int, offset: int = 0
    ) -> tuple[int, list[CycleRow]]:
        """(matching count, a page of cycles newest first), of one target or of all."""
        rows = await self._pool.fetch(query("list_cycles"), target_key, limit, offset)
        total = int(rows[0]["total"]) if rows else 0
        return total, [CycleRow(**{k: v for k, v in r.items() if k != "total"}) for r in rows]

    # ------------------------------------------------------------------ pending messages
    async def queue_message(
        self, target_key: str, cycle_id: int | None, content: str, *, now: datetime
    ) -> int:
        return int(
            await self._pool.fetchval(
                query("queue_pending_message"), target_key, cycle_id, content, now
            )
        )

    async def take_messages(self, target_key: str, *, now: datetime) -> list[PendingMessage]:
        """Mark the target's pending messages delivered and return them (each only once)."""
        rows = await self._pool.fetch(query("take_pending_messages"), target_key, now)
        return [PendingMessage(r["id"], r["content"], r["created_at"]) for r in rows]

    async def release_message(self, target_key: str, message_id: int, error: str) -> None:
        """A taken message whose send failed: pending again, with the reason."""
        await self._pool.execute(query("release_pending_message"), target_key, message_id, error)

    async def count_messages(self, target_key: str) -> int:
        return int(await self._pool.fetchval(query("count_pending_messages"), target_key))

    # ------------------------------------------------------------------ the partition
    async def memories(self, partition_key: str) -> list[MemoryRecord]:
        """Every memory of the partition in (created_at, id) order, without vectors."""
        rows = await self._pool.fetch(query("memories_for_consolidation"), partition_key)
        return [record_from_row(r) for r in rows]

    async def duplicate_pairs(
        self, partition_key: str, min_similarity: float
    ) -> list[tuple[str, str, float]]:
        """Pairs (a, b, cosine similarity) at or above ``min_similarity``, a < b."""
        rows = await self._pool.fetch(query("duplicate_pairs"), partition_key, min_similarity)
        return [(r["a_id"], r["b_id"], float(r["similarity"])) for r in rows]

    async def knowledge_candidates(
        self, partition_key: str, min_similarity: float, min_partitions: int
    ) -> list[KnowledgeCandidate]:
        """The partition's memories worth a knowledge entry, strongest evidence first."""
        rows = await self._pool.fetch(
            query("knowledge_candidates"), partition_key, min_similarity, min_partitions
        )
        return [
            KnowledgeCandidate(
                id=r["id"],
                content=r["content"],
                importance=int(r["importance"]),
                category=r["category"],
                partitions=int(r["partitions"]),
            )
            for r in rows
        ]

    async def stats(self, partition_key: str) -> PartitionStats:
        row = await self._pool.fetchrow(query("memory_stats"), partition_key)
        assert row is not None
        return PartitionStats(
            int(row["total"]), int(row["low"]), row["oldest"], row["newest"], int(row["avg_length"])
        )
