"""The second seed's state in PostgreSQL: the per-turn memory block, scopes
loaded into a chat, automatic-extraction runs and the sessions they read.

The statements are the named queries of ``sql/queries/seed.sql``, one wrapper each. The
memory block is ONE round trip whatever it carries (memos, loaded scopes, candidate
memories, relevant memories): it runs on every chat turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import asyncpg

from amrita_memory_pg.domain.injection import Candidate
from amrita_memory_pg.domain.ports import TokenUsage, Vector
from amrita_memory_pg.domain.records import ChatLine
from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.reads import ReadRoute
from amrita_memory_pg.storage.rows import from_row


@dataclass(frozen=True, slots=True)
class BlockRows:
    """What one turn's block query returned, split by part."""

    memos: dict[str, str]
    loaded: list[str]
    memories: list[Candidate]
    relevant: list[Candidate]
    #: the speaker's profile summary ("" when not asked for or empty)
    profile: str = ""
    #: the partitions asked for that are paused: left out of everything above
    paused: frozenset[str] = frozenset()
    #: the candidates' version; when it equals the one the caller passed, ``memories`` is
    #: empty and the caller's copy is current
    version: int | None = None


@dataclass(frozen=True, slots=True)
class ExpiredSession:
    session_key: str
    last_id: int
    last_at: datetime


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One extraction run as it is recorded (``record_extraction_run``): what it read,
    what it did and what it cost."""

    session_key: str
    partition_key: str
    trigger: str
    status: str
    reason: str | None
    entries: int
    chat_until_id: int | None
    model: str | None
    usage: TokenUsage
    started_at: datetime
    finished_at: datetime


@dataclass(frozen=True, slots=True)
class ExtractionRun(RunRecord):
    """One recorded run (``extraction_run`` row): the record and its id."""

    id: int


def _candidate(row: Any) -> Candidate:
    """A block row (kind, partition_key, content, id, importance, category, updated_epoch)
    as a candidate; positional, as the block reads 200 a turn."""
    _kind, partition_key, content, memory_id, importance, category, updated = row
    return Candidate(memory_id, partition_key, content, int(importance), category, updated)


class BotMemoryRepository:
    """Reads and writes ``loaded_scope`` and ``extraction_run``; the block query."""

    def __init__(self, pool: asyncpg.Pool, route: ReadRoute | None = None) -> None:
        self._pool = pool
        #: the block's one read-only query may go to a replica: it runs at the
        #: start of a turn, before the turn writes anything — unless this process wrote one
        #: of its partitions (memo or memory) within the route's window: then the primary,
        #: so that what a person or the LLM just wrote is in the next turn's block
        self.route = route if route is not None else ReadRoute(pool)

    @property
    def pool(self) -> asyncpg.Pool:
        return self._pool

    async def block(
        self,
        *,
        memo_keys: Sequence[str],
        chat_key: str,
        scope_keys: Sequence[str],
        limit: int,
        query_vector: Vector | None = None,
        top_k: int = 0,
        profile_key: str | None = None,
        known_version: int | None = None,
    ) -> BlockRows:
        """Memos, loaded scopes, candidates, relevant memories and the profile summary
        of ``profile_key`` (None: not asked for): one query."""
        keys = {*memo_keys, *scope_keys, *([profile_key] if profile_key else [])}
        replica = self.route.replicated and all(self.route.on_replica(k) for k in keys)
        rows = await (self.route.read_pool if replica else self._pool).fetch(
            query("memory_block"),
            list(dict.fromkeys(memo_keys)),
            chat_key,
            list(dict.fromkeys(scope_keys)),
            limit,
            query_vector,
            top_k if query_vector is not None else 0,
            profile_key,
            known_version,
        )
        memos: dict[str, str] = {}
        loaded: list[str] = []
        memories: list[Candidate] = []
        relevant: list[Candidate] = []
        profile = ""
        paused: set[str] = set()
        version: int | None = None
        for row in rows:
            kind = row[0]
            if kind == "memory":  # most rows: positional, as _candidate reads them
                memories.append(_candidate(row))
            elif kind == "memo":
                memos[row[1]] = row[2]
            elif kind == "loaded":
                loaded.append(row[1])
            elif kind == "profile":
                profile = row[2]
            elif kind == "paused":
                paused.add(row[1])
            elif kind == "version":
                version = int(row[3])
            else:
                relevant.append(_candidate(row))
        return BlockRows(memos, loaded, memories, relevant, profile, frozenset(paused), version)

    # ------------------------------------------------------------------ loaded scopes

    async def load(self, chat_key: str, scope_key: str, user_id: str, now: datetime) -> None:
        await self._pool.execute(query("load_scope"), chat_key, scope_key, user_id, now)

    async def unload(self, chat_key: str, scope_key: str) -> bool:
        return await self._pool.fetchval(query("unload_scope"), chat_key, scope_key) is not None

    async def unload_all(self, chat_key: str) -> int:
        return int(await self._pool.fetchval(query("unload_all_scopes"), chat_key))

    async def expire_loaded(self, idle_since: datetime) -> int:
        """Drop the scopes of chats silent since ``idle_since``; returns how many."""
        return int(await self._pool.fetchval(query("expire_loaded_scopes"), idle_since))

    async def loaded(self, chat_key: str) -> list[str]:
        return [
            r["scope_key"] for r in await self._pool.fetch(query("list_loaded_scopes"), chat_key)
        ]

    async def spoke_in(self, session_key: str, user_id: str) -> bool:
        return bool(await self._pool.fetchval(query("spoke_in_session"), session_key, user_id))

    # ------------------------------------------------------------------ extraction

    async def expired_sessions(self, idle_since: datetime, limit: int) -> list[ExpiredSession]:
        """Sessions silent since ``idle_since`` with lines no extraction has read yet."""
        rows = await self._pool.fetch(query("expired_sessions"), idle_since, limit)
        return [from_row(ExpiredSession, r) for r in rows]

    async def unread_lines(self, session_key: str, limit: int) -> list[ChatLine]:
        """The newest ``limit`` lines after the last extraction, oldest first."""
        rows = await self._pool.fetch(query("session_lines_since"), session_key, limit)
        return [from_row(ChatLine, r) for r in reversed(rows)]

    @staticmethod
    async def record_run(conn: Any, run: RunRecord) -> int:
        """Record ``run`` on ``conn`` (a connection inside the replacing transaction, or
        the pool); returns its id."""
        usage = run.usage
        return int(
            await conn.fetchval(
                query("record_extraction_run"),
                run.session_key,
                run.partition_key,
                run.trigger,
                run.status,
                run.reason,
                run.entries,
                run.chat_until_id,
                run.model,
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.total_tokens,
                run.started_at,
                run.finished_at,
            )
        )

    async def runs(self, session_key: str, limit: int = 10) -> list[ExtractionRun]:
        rows = await self._pool.fetch(query("extraction_runs"), session_key, limit)
        return [
            ExtractionRun(
                **{f.name: r[f.name] for f in fields(RunRecord) if f.name != "usage"},
                usage=TokenUsage(r["prompt_tokens"], r["completion_tokens"], r["total_tokens"]),
                id=r["id"],
            )
            for r in rows
        ]
