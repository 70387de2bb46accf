"""The knowledge base, its suggestion queue and permission grants in PostgreSQL.

It takes vectors, never texts to embed (the service embeds first, outside any
transaction). Every statement is a named query of ``sql/queries/knowledge.sql``; the
writes are the functions of ``sql/functions/knowledge.sql``, which check the
configured limits themselves and answer with a status that is mapped
here to the domain errors — never by parsing text. Time is an argument.

Every write stores the entry's search tokens
(:func:`~amrita_memory_pg.domain.tokens.search_tokens` of title + summary + body, for
keyword and hybrid search): a create passes them with the row; an update gets the text back
from ``knowledge_update_v2`` (a line-range edit makes the new body in SQL) and stores the
tokens of that text in the same transaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from amrita_memory_pg.domain.errors import (
    KnowledgeError,
    KnowledgeNotFound,
    KnowledgeRangeError,
    KnowledgeTooLong,
    SuggestionRefused,
)
from amrita_memory_pg.domain.knowledge import (
    KnowledgeEntry,
    KnowledgeHit,
    KnowledgeInfo,
    KnowledgeWindow,
    KnowledgeWrite,
    Suggestion,
    knowledge_search_text,
)
from amrita_memory_pg.domain.lineage import knowledge_ref
from amrita_memory_pg.domain.ports import ProviderInfo, Vector
from amrita_memory_pg.domain.records import Ranking
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.storage.lineage import record_derived
from amrita_memory_pg.storage.memories import raise_if_model_mismatch
from amrita_memory_pg.storage.pg.outcome import write_connection
from amrita_memory_pg.storage.queries import query

#: a claim older than this belongs to a cycle that died without completing or releasing
STALE_CLAIM = timedelta(hours=1)
#: done suggestions are kept this long at least (the rate limit counts them)
KEEP_DONE = timedelta(days=1)


def _model(provider: ProviderInfo | None) -> tuple[str | None, str | None, str | None]:
    """The embedder's protocol, model and base URL (recorded by a store's first write)."""
    if provider is None:
        return (None, None, None)
    return (provider.protocol, provider.model, provider.base_url)


def _suggestion(row: Any) -> Suggestion:
    return Suggestion(
        id=int(row["id"]),
        action=row["action"],
        kid=row["kid"],
        title=row["title"],
        summary=row["summary"],
        body=row["body"],
        reason=row["reason"],
        author_id=row["author_id"],
        created_at=row["created_at"],
        status=row.get("status", "claimed"),
    )


def _write_result(row: Any, max_chars: int) -> KnowledgeWrite:
    assert row is not None, "knowledge write functions always return one row"
    status = row["status"]
    if status in ("created", "updated"):
        return KnowledgeWrite(row["kid"], row["total_lines"], row["char_count"])
    if status == "not_found":
        raise KnowledgeNotFound(row["kid"])
    if status == "too_long":
        raise KnowledgeTooLong(row["char_count"], max_chars)
    if status == "range":
        total = row["total_lines"]
        raise KnowledgeRangeError(
            f"行范围越界：需 0 ≤ start_line ≤ end_line ≤ {total}（该条目共 {total} 行）", total
        )
    if status == "exists":
        raise KnowledgeError(f"knowledge id {row['kid']} is already taken")
    raise KnowledgeError(f"knowledge write refused: {status}")


class KnowledgeRepository:
    """Entries, suggestions and grants on one pool."""

    def __init__(
        self, pool: asyncpg.Pool, *, max_chars: int, acquire_timeout: float | None = None
    ) -> None:
        self.pool = pool
        #: ``knowledge_max_chars``, passed to every write
        self.max_chars = max_chars
        self.acquire_timeout = acquire_timeout

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[PoolConnectionProxy]:
        """One write: driver failures as DatabaseRefused/OutcomeUnknown, model checks
        (AMF01/AMF03) as FingerprintMismatch."""
        async with write_connection(self.pool, acquire_timeout=self.acquire_timeout) as conn:
            try:
                yield conn
            except asyncpg.PostgresError as exc:
                raise_if_model_mismatch(exc)
                raise

    # ------------------------------------------------------------------ entries

    async def create(
        self,
        *,
        kid: str,
        title: str,
        summary: str,
        body: str,
        vector: Vector,
        fingerprint: str,
        provider: ProviderInfo | None = None,
        now: datetime,
    ) -> KnowledgeWrite:
        """A new entry; inside :func:`~amrita_memory_pg.domain.lineage.deriving` (the loop
        distilling it) what it was made from is recorded in the same transaction."""
        async with self._writing() as conn, conn.transaction():
            row = await conn.fetchrow(
                query("knowledge_create"),
                kid,
                title,
                summary,
                body,
                vector,
                fingerprint,
                self.max_chars,
                now,
                search_tokens(knowledge_search_text(title, summary, body)),
                *_model(provider),
            )
            if row is not None and row["status"] == "created":
                text = knowledge_search_text(title, summary, body)
                await record_derived(conn, knowledge_ref(row["kid"]), text, now)
        return _write_result(row, self.max_chars)

    async def update(
        self,
        kid: str,
        *,
        title: str | None,
        summary: str | None,
        body: str | None,
        start_line: int | None,
        end_line: int | None,
        vector: Vector | None,
        fingerprint: str | None,
        provider: ProviderInfo | None = None,
        now: datetime,
    ) -> KnowledgeWrite:
        async with self._writing() as conn, conn.transaction():
            row = await conn.fetchrow(
                query("knowledge_update"),
                kid,
                title,
                summary,
                body,
                start_line,
                end_line,
                vector,
                fingerprint,
                self.max_chars,
                now,
                *_model(provider),
            )
            if row is not None and row["status"] == "updated" and row["title"] is not None:
                text = (row["title"], row["summary"], row["body"])
                await conn.fetchval(
                    query("knowledge_set_tokens"),
                    kid,
                    *text,
                    search_tokens(knowledge_search_text(*text)),
                    True,
                )
            if row is not None and row["status"] == "updated" and row["title"] is not None:
                written = knowledge_search_text(row["title"], row["summary"], row["body"])
                await record_derived(conn, knowledge_ref(kid), written, now, own_earlier_text=True)
        return _write_result(row, self.max_chars)

    async def delete(self, kid: str) -> bool:
        async with self._writing() as conn:
            return bool(await conn.fetchval(query("knowledge_delete"), kid))

    async def entries(self) -> list[KnowledgeInfo]:
        rows = await self.pool.fetch(query("knowledge_list"))
        return [
            KnowledgeInfo(
                kid=r["kid"],
                title=r["title"],
                summary=r["summary"],
                total_lines=r["total_lines"],
                char_count=r["char_count"],
                created_at=r["created_at"],
                updated_at=r["updated_at"],
            )
            for r in rows
        ]

    async def read(self, kid: str, start: int | None, end: int | None) -> KnowledgeWindow | None:
        row = await self.pool.fetchrow(query("knowledge_read"), kid, start, end)
        if row is None:
            return None
        return KnowledgeWindow(
            kid=row["kid"],
            title=row["title"],
            summary=row["summary"],
            body_lines=tuple(row["body_lines"] or ()),
            total_lines=row["total_lines"],
            range_start=row["range_start"],
            range_end=row["range_end"],
        )

    async def get(self, kid: str) -> KnowledgeEntry | None:
        row = await self.pool.fetchrow(query("knowledge_body"), kid)
        if row is None:
            return None
        return KnowledgeEntry(
            kid=row["kid"],
            title=row["title"],
            summary=row["summary"],
            body=row["body"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    async def search(
        self, vector: Vector | None, top_k: int, ranking: Ranking | None = None
    ) -> list[KnowledgeHit]:
        """The ``top_k`` best entries by ``ranking`` (default: vector, release 1's order);
        ``vector`` may be None in keyword mode only."""
        ranking = ranking or Ranking()
        rows = await self.pool.fetch(
            query("knowledge_search"),
            vector,
            list(ranking.tokens),
            ranking.mode,
            top_k,
            ranking.fusion,
            ranking.rrf_k,
            ranking.keyword_weight,
        )
        return [
            KnowledgeHit(
                r["kid"],
                r["title"],
                r["summary"],
                None if r["distance"] is None else float(r["distance"]),
                float(r["keyword_score"]),
                float(r["score"]),
            )
            for r in rows
        ]

    async def exists(self, kid: str) -> bool:
        return bool(await self.pool.fetchval(query("knowledge_exists"), kid))

    # ------------------------------------------------------------------ suggestions

    async def suggest(
        self,
        *,
        action: str,
        kid: str | None,
        title: str,
        summary: str,
        body: str,
        reason: str,
        author_id: str,
        max_pending: int,
        rate_limit: int,
        rate_window_seconds: int,
        now: datetime,
    ) -> tuple[int, int]:
        """Queue a suggestion; (its id, unhandled count). Raises :class:`SuggestionRefused`."""
        async with self._writing() as conn:
            row = await conn.fetchrow(
                query("knowledge_suggest"),
                action,
                kid,
                title,
                summary,
                body,
                reason,
                author_id,
                max_pending,
                rate_limit,
                rate_window_seconds,
                now,
            )
        assert row is not None
        status = row["status"]
        if status == "queued":
            return int(row["id"]), int(row["pending"])
        if status == "full":
            raise SuggestionRefused(
                f"知识建议队列已满（{row['pending']}/{max_pending} 条待处理），本条未提交；"
                "请等后台记忆管家处理完已有建议后再提交",
                "full",
            )
        if status == "rate_limited":
            minutes = max(1, rate_window_seconds // 60)
            raise SuggestionRefused(
                f"提交过于频繁：每位用户每 {minutes} 分钟最多 {rate_limit} 条知识建议，本条未提交，请稍后再试",
                "rate_limited",
            )
        if status == "unknown_kid":
            raise SuggestionRefused(
                f"Knowledge not found: {kid}（更新建议必须给出已存在条目的 kid，可用 knowledge_list 查看）",
                "unknown_kid",
            )
        raise SuggestionRefused(f"知识建议未提交: {status}", status)

    async def claim_suggestions(self, cycle_id: int, now: datetime) -> list[Suggestion]:
        async with self._writing() as conn:
            rows = await conn.fetch(
                query("knowledge_claim_suggestions"), cycle_id, now, now - STALE_CLAIM
            )
        return [_suggestion(r) for r in rows]

    async def complete_suggestions(self, cycle_id: int, now: datetime) -> int:
        async with self._writing() as conn:
            return int(
                await conn.fetchval(
                    query("knowledge_complete_suggestions"), cycle_id, now, now - KEEP_DONE
                )
            )

    async def release_suggestions(self, cycle_id: int) -> int:
        async with self._writing() as conn:
            return int(await conn.fetchval(query("knowledge_release_suggestions"), cycle_id))

    async def pending_suggestions(self, limit: int) -> tuple[int, list[dict[str, Any]]]:
        """(unhandled count, the first ``limit`` of them as plain dicts)."""
        rows = await self.pool.fetch(query("knowledge_pending_suggestions"), limit)
        total = rows[0]["total"] if rows else 0
        return total, [{k: v for k, v in r.items() if k != "total"} for r in rows]

    async def suggestion(self, suggestion_id: int) -> Suggestion | None:
        """One suggestion with its body and queue status (None: pruned or never made)."""
        row = await self.pool.fetchrow(query("knowledge_suggestion_get"), suggestion_id)
        return None if row is None else _suggestion(row)

    async def take_suggestion(self, suggestion_id: int, now: datetime) -> bool:
        """An operator handles a pending suggestion: done; False when it is not pending."""
        async with self._writing() as conn:
            return bool(await conn.fetchval(query("knowledge_suggestion_take"), suggestion_id, now))

    async def untake_suggestion(self, suggestion_id: int) -> None:
        """Undo :meth:`take_suggestion` after the accept's write failed."""
        async with self._writing() as conn:
            await conn.execute(query("knowledge_suggestion_untake"), suggestion_id)

    # ------------------------------------------------------------------ grants

    async def grant(self, user_id: str, node: str, *, by: str, now: datetime) -> bool:
        async with self._writing() as conn:
            return bool(await conn.fetchval(query("grant_permission"), user_id, node, by, now))

    async def revoke(self, user_id: str, node: str) -> bool:
        async with self._writing() as conn:
            return bool(await conn.fetchval(query("revoke_permission"), user_id, node))

    async def has_permission(self, user_id: str, node: str) -> bool:
        return bool(await self.pool.fetchval(query("has_permission"), user_id, node))

    async def grants(self) -> list[tuple[str, str, str, datetime]]:
        rows = await self.pool.fetch(query("list_permissions"))
        return [(r["user_id"], r["node"], r["granted_by"], r["created_at"]) for r in rows]
