"""L1 memos: one declarative note per partition, read every turn, written whole or appended.

The statements are the named queries of ``sql/queries/memos.sql`` (one typed wrapper
each); writes go through the SQL functions of ``sql/functions/memo.sql``: the cap
(``memo_max_chars``, in characters) is checked by the write statement itself, under the
row lock, so concurrent appends never lose one and never overshoot the cap. There is no
per-process cache (the reference's cache went stale across processes): a read is one
primary-key lookup.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import asyncpg

from amrita_memory_pg.domain.errors import MemoTooLong
from amrita_memory_pg.domain.lineage import memo_sentences
from amrita_memory_pg.domain.records import Memo, MemoWrite
from amrita_memory_pg.storage.lineage import deriving_now, record_texts
from amrita_memory_pg.storage.pg.outcome import write_connection
from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.storage.reads import ReadRoute
from amrita_memory_pg.storage.trail import act, raise_if_paused, refusable


class MemoRepository:
    """Repository of L1 memos on an asyncpg pool; ``max_chars`` comes from the settings."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        max_chars: int,
        *,
        acquire_timeout: float | None = None,
        route: ReadRoute | None = None,
    ) -> None:
        self._pool = pool
        self.max_chars = max_chars
        #: longest wait for a pooled connection before a write is refused (None = no limit)
        self.acquire_timeout = acquire_timeout
        #: where the per-turn block reads: a memo written here is read from the
        #: primary for a while, so the next turn shows it however far a replica lags
        self.route = route

    async def _write(self, sql: str, partition_key: str, *args: Any) -> Any:
        """One write statement; a driver failure comes out as ``DatabaseRefused`` (no effect)
        or ``OutcomeUnknown`` (an append retried blindly would repeat itself).

        An automatic writer (the chat LLM, extraction, the loop) is told to the database in
        the same transaction, which refuses it on a paused partition (pause.sql,
        :class:`MemoryPaused`); a person's write stays one statement.
        """
        if self.route is not None:
            self.route.wrote(partition_key)
        async with write_connection(self._pool, acquire_timeout=self.acquire_timeout) as conn:
            try:
                if not refusable() and not deriving_now():
                    return await conn.fetchrow(sql, partition_key, *args)
                async with conn.transaction():
                    await act(conn)
                    row = await conn.fetchrow(sql, partition_key, *args)
                    if row is not None and row["applied"]:
                        # the loop's rewrite: what its sentences were made from
                        await record_texts(
                            conn, "memo_sentence", partition_key, memo_sentences(args[0]), args[-1]
                        )
                    return row
            except asyncpg.PostgresError as exc:
                raise_if_paused(exc, partition_key)
                raise

    async def get(self, partition_key: str) -> Memo:
        """The memo of a partition ("" with version 0 when there is none)."""
        row = await self._pool.fetchrow(query("get_memo"), partition_key)
        if row is None:
            return Memo(partition_key, "", 0, None)
        return Memo(partition_key, row["content"], row["version"], row["updated_at"])

    async def get_many(self, partition_keys: Iterable[str]) -> dict[str, str]:
        """The non-empty memos among ``partition_keys``, in one indexed query."""
        keys = list(dict.fromkeys(partition_keys))
        if not keys:
            return {}
        rows = await self._pool.fetch(query("get_memos"), keys)
        return {row["partition_key"]: row["content"] for row in rows}

    async def append(
        self, partition_key: str, addition: str, *, now: datetime | None = None
    ) -> MemoWrite:
        """Append ``addition`` on a new line; raises :class:`MemoTooLong` past the cap."""
        row = await self._write(
            query("append_memo"), partition_key, addition, self.max_chars, now or datetime.now(UTC)
        )
        return self._result(row)

    async def replace(
        self, partition_key: str, content: str, *, now: datetime | None = None
    ) -> MemoWrite:
        """Replace the whole memo ("" clears it); raises :class:`MemoTooLong` past the cap."""
        row = await self._write(
            query("write_memo"), partition_key, content, self.max_chars, now or datetime.now(UTC)
        )
        return self._result(row)

    def _result(self, row: Any) -> MemoWrite:
        assert row is not None, "memo write functions always return one row"
        if not row["applied"]:
            raise MemoTooLong(row["chars"], self.max_chars, row["current_chars"])
        return MemoWrite(chars=row["chars"], version=row["version"])
