"""The knowledge base as every surface uses it: texts in, entries and hits out.

:class:`KnowledgeService` validates (:mod:`amrita_memory_pg.domain.validation`, the same
checks for the tools, ``/memory`` and the CLI), embeds the summary (what the reference
embedded and a search matches) outside any transaction, and writes through
:class:`~amrita_memory_pg.storage.knowledge.KnowledgeRepository`, whose SQL functions
enforce ``knowledge_max_chars`` in the write itself. It also holds the suggestion queue
(claimed per L3 cycle, done only when the cycle succeeds) and the permission check of
the chat-side reads. Nothing here needs the L3 loop to run.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from amrita_memory_pg.domain.errors import (
    KnowledgeError,
    KnowledgeNotFound,
    KnowledgeRangeError,
    KnowledgeTooLong,
)
from amrita_memory_pg.domain.knowledge import (
    GRANTABLE_NODES,
    KNOWLEDGE_NODE,
    KnowledgeEntry,
    KnowledgeHit,
    KnowledgeInfo,
    KnowledgeWindow,
    KnowledgeWrite,
    Suggestion,
    can_read_knowledge,
    normalize_body,
)
from amrita_memory_pg.domain.ports import Embedder
from amrita_memory_pg.domain.records import SEARCH_MODES, Ranking, SearchMode
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.domain.validation import (
    MAX_ID_CHARS,
    MAX_QUERY_CHARS,
    MAX_SUGGESTION_REASON_CHARS,
    InvalidInput,
    check_kid,
    check_knowledge_body,
    check_knowledge_summary,
    check_knowledge_title,
    check_text,
)
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.knowledge import KnowledgeRepository

#: the reference's refusal of a chat-side read: it names no entry and no count
NO_PERMISSION = "无权限读取知识库（需要 LP 节点 memory.knowledge，或 lp.admin / 超级用户）"
DISABLED = "全局知识库未启用（enabled=false 或 enable_knowledge=false）"
SEARCH_TOP_K_MAX = 50
#: one rate-limit window: knowledge_suggest_per_hour counts this many seconds back
RATE_WINDOW_SECONDS = 3600


def new_kid() -> str:
    """8 lowercase hex characters, like the reference's ``uuid4().hex[:8]``."""
    return secrets.token_hex(4)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _field(name: str, check: Callable[[], str]) -> str:
    """Run a field check; a refusal names the field."""
    try:
        return check()
    except InvalidInput as exc:
        raise KnowledgeError(f"{name} {exc.reason}") from exc


class KnowledgeService:
    """Validates, embeds the summary, then reads or writes through the repository."""

    def __init__(
        self,
        repo: KnowledgeRepository,
        embedder: Embedder,
        settings: Settings,
        *,
        make_kid: Callable[[], str] = new_kid,
    ) -> None:
        self.repo = repo
        self.embedder = embedder
        self.settings = settings
        self.make_kid = make_kid

    @property
    def enabled(self) -> bool:
        return self.settings.subconscious.enable_knowledge

    @property
    def max_chars(self) -> int:
        return self.settings.subconscious.knowledge_max_chars

    # ------------------------------------------------------------------ permission

    async def can_read(self, user_id: str, roles: frozenset[str], *, in_group: bool) -> bool:
        """Whether a chat user may read the knowledge base (§10.6).

        Roles first (no query); the grants table only for everyone else.
        """
        quick = can_read_knowledge(
            roles,
            in_group=in_group,
            group_admins_read=self.settings.subconscious.knowledge_read_group_admins,
            granted=False,
        )
        if quick:
            return True
        return await self.repo.has_permission(user_id, KNOWLEDGE_NODE)

    # ------------------------------------------------------------------ validation

    def _kid(self, kid: str) -> str:
        return _field("kid", lambda: check_text(kid.strip(), max_chars=MAX_ID_CHARS))

    def _body(self, body: str) -> str:
        body = normalize_body(body)
        if len(body) > self.max_chars:
            raise KnowledgeTooLong(len(body), self.max_chars)
        return _field("body", lambda: check_knowledge_body(body, self.max_chars))

    # ------------------------------------------------------------------ reads

    async def entries(self) -> list[KnowledgeInfo]:
        return await self.repo.entries()

    async def read(
        self, kid: str, start_line: int | None = None, end_line: int | None = None
    ) -> KnowledgeWindow:
        """Lines ``[start_line, end_line)``; an ``end_line`` past the end reads to the end.

        Refused (nothing clamped silently): a negative start, an end before the start,
        a start past the last line.
        """
        kid = self._kid(kid)
        if start_line is not None and start_line < 0:
            raise KnowledgeRangeError("start_line 不能为负数（行号从 0 开始）", -1)
        if end_line is not None and end_line < (start_line or 0):
            raise KnowledgeRangeError("end_line 不能小于 start_line（区间为 [start, end)）", -1)
        window = await self.repo.read(kid, start_line, end_line)
        if window is None:
            raise KnowledgeNotFound(kid)
        if window.range_start > window.total_lines:
            total = window.total_lines
            raise KnowledgeRangeError(
                f"start_line {window.range_start} 超出范围：该条目共 {total} 行（有效 0..{total}）",
                total,
            )
        return window

    async def get(self, kid: str) -> KnowledgeEntry:
        kid = self._kid(kid)
        entry = await self.repo.get(kid)
        if entry is None:
            raise KnowledgeNotFound(kid)
        return entry

    def ranking(self, mode: SearchMode | None, query: str) -> Ranking:
        """How a search for ``query`` ranks: ``mode`` or ``[retrieval] default_mode``, the
        query's search tokens, the fusion — the settings of the memories' search."""
        retrieval = self.settings.retrieval
        chosen = mode or retrieval.default_mode
        if chosen not in SEARCH_MODES:
            raise KnowledgeError(f"未知的检索方式 mode={chosen!r}：可用 hybrid、vector、keyword")
        return Ranking(
            mode=chosen,
            tokens=tuple(search_tokens(query)),
            fusion=retrieval.fusion,
            rrf_k=retrieval.rrf_k,
            keyword_weight=retrieval.keyword_weight,
        )

    async def search(
        self, query: str, top_k: int = 5, *, mode: SearchMode | None = None
    ) -> list[KnowledgeHit]:
        """The best ``top_k`` entries; relevance by ``mode`` (default: the configured
        ``retrieval.default_mode``): vector = the summary's vector, keyword = BM25 over
        title + summary + body (embeds nothing: works while the embedder is down),
        hybrid = both fused."""
        text = _field("query", lambda: check_text(query.strip(), max_chars=MAX_QUERY_CHARS))
        if not text:
            raise KnowledgeError("query 不能为空")
        top_k = max(1, min(top_k, SEARCH_TOP_K_MAX))
        ranking = self.ranking(mode, text)
        vector = None if ranking.mode == "keyword" else await self.embedder.embed_query(text)
        return await self.repo.search(vector, top_k, ranking)

    # ------------------------------------------------------------------ writes

    async def create(
        self,
        *,
        title: str,
        summary: str,
        body: str,
        kid: str | None = None,
        now: datetime | None = None,
    ) -> KnowledgeWrite:
        """Validate, embed the summary, insert. ``kid`` only for imports (else a new one)."""
        title = _field("title", lambda: check_knowledge_title(title))
        summary = _field("summary", lambda: check_knowledge_summary(summary))
        body = self._body(body)
        if kid is not None:
            given = kid
            kid = _field("kid", lambda: check_kid(given))
        (vector,) = await self.embedder.embed_passages([summary])
        return await self.repo.create(
            kid=kid or self.make_kid(),
            title=title,
            summary=summary,
            body=body,
            vector=vector,
            fingerprint=self.embedder.fingerprint,
            provider=self.embedder.provider,
            now=now or _utcnow(),
        )

    async def update(
        self,
        kid: str,
        *,
        title: str | None = None,
        summary: str | None = None,
        body: str | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
        now: datetime | None = None,
    ) -> KnowledgeWrite:
        """Change some fields; with ``start_line`` the body replaces lines
        ``[start_line, end_line)`` (``end_line`` omitted = to the end; equal = insert;
        an empty body deletes the range). The summary is re-embedded when it changes."""
        kid = self._kid(kid)
        if title is None and summary is None and body is None:
            raise KnowledgeError("At least one of title/summary/body must be provided")
        if (start_line is not None or end_line is not None) and body is None:
            raise KnowledgeError("start_line/end_line 只能与 body 一同给出（body 替换该行区间）")
        if end_line is not None and start_line is None:
            start_line = 0
        if start_line is not None and start_line < 0:
            raise KnowledgeRangeError("start_line 不能为负数（行号从 0 开始）", -1)
        if title is not None:
            new_title = title
            title = _field("title", lambda: check_knowledge_title(new_title))
        if summary is not None:
            new_summary = summary
            summary = _field("summary", lambda: check_knowledge_summary(new_summary))
        if body is not None:
            body = self._body(body)
        vector = None
        if summary is not None:
            current = await self.repo.get(kid)
            if current is None:
                raise KnowledgeNotFound(kid)
            if current.summary != summary:
                (vector,) = await self.embedder.embed_passages([summary])
        return await self.repo.update(
            kid,
            title=title,
            summary=summary,
            body=body,
            start_line=start_line,
            end_line=end_line,
            vector=vector,
            fingerprint=self.embedder.fingerprint if vector is not None else None,
            provider=self.embedder.provider if vector is not None else None,
            now=now or _utcnow(),
        )

    async def delete(self, kid: str) -> None:
        kid = self._kid(kid)
        if not await self.repo.delete(kid):
            raise KnowledgeNotFound(kid)

    async def put(self, entry: KnowledgeEntry, *, now: datetime | None = None) -> str:
        """Import one entry under its own kid: create it, or overwrite the one there.

        Returns ``created``, ``updated`` or ``unchanged``.
        """
        current = await self.repo.get(entry.kid)
        if current is None:
            await self.create(
                title=entry.title, summary=entry.summary, body=entry.body, kid=entry.kid, now=now
            )
            return "created"
        if (current.title, current.summary, current.body) == (
            entry.title,
            entry.summary,
            normalize_body(entry.body),
        ):
            return "unchanged"
        await self.update(
            entry.kid, title=entry.title, summary=entry.summary, body=entry.body, now=now
        )
        return "updated"

    # ------------------------------------------------------------------ suggestions

    async def suggest(
        self,
        *,
        author_id: str,
        action: Literal["create", "update"],
        title: str,
        summary: str,
        body: str,
        reason: str = "",
        kid: str | None = None,
        now: datetime | None = None,
    ) -> tuple[int, int]:
        """Queue a suggestion for the L3 loop; (id, unhandled count). Anyone may suggest;
        bounded by ``knowledge_suggest_max`` and ``knowledge_suggest_per_hour``."""
        title = _field("title", lambda: check_knowledge_title(title))
        summary = _field("summary", lambda: check_knowledge_summary(summary))
        body = self._body(body)
        reason = _field(
            "reason", lambda: check_text(reason.strip(), max_chars=MAX_SUGGESTION_REASON_CHARS)
        )
        if action == "update":
            if not kid or not kid.strip():
                raise KnowledgeError("action=update 时必须给出 kid（要更新的条目）")
            kid = self._kid(kid)
        else:
            kid = None
        sub = self.settings.subconscious
        return await self.repo.suggest(
            action=action,
            kid=kid,
            title=title,
            summary=summary,
            body=body,
            reason=reason,
            author_id=author_id,
            max_pending=sub.knowledge_suggest_max,
            rate_limit=sub.knowledge_suggest_per_hour,
            rate_window_seconds=RATE_WINDOW_SECONDS,
            now=now or _utcnow(),
        )

    async def claim_suggestions(
        self, cycle_id: int, *, now: datetime | None = None
    ) -> list[Suggestion]:
        """Every pending suggestion, now held by ``cycle_id`` until it completes or releases."""
        return await self.repo.claim_suggestions(cycle_id, now or _utcnow())

    async def complete_suggestions(self, cycle_id: int, *, now: datetime | None = None) -> int:
        """The cycle succeeded: what it claimed is handled. (The runner calls this.)"""
        return await self.repo.complete_suggestions(cycle_id, now or _utcnow())

    async def release_suggestions(self, cycle_id: int) -> int:
        """The cycle failed or was aborted: what it claimed is pending again."""
        return await self.repo.release_suggestions(cycle_id)

    async def pending_suggestions(self, limit: int = 20) -> tuple[int, list[dict[str, Any]]]:
        return await self.repo.pending_suggestions(limit)

    async def suggestion(self, suggestion_id: int) -> Suggestion:
        """One suggestion with its body (the admin page shows it before accept/reject)."""
        found = await self.repo.suggestion(suggestion_id)
        if found is None:
            raise KnowledgeError(f"知识建议 #{suggestion_id} 不存在（可能已处理并清理）")
        return found

    async def _pending(self, suggestion_id: int) -> Suggestion:
        found = await self.suggestion(suggestion_id)
        if found.status == "claimed":
            raise KnowledgeError(
                f"知识建议 #{suggestion_id} 正由后台记忆管家（L3 周期）处理，不能再手动处理"
            )
        if found.status != "pending":
            raise KnowledgeError(f"知识建议 #{suggestion_id} 已处理过")
        return found

    async def accept_suggestion(
        self, suggestion_id: int, *, now: datetime | None = None
    ) -> KnowledgeWrite:
        """An operator accepts a pending suggestion: its entry is created (or the entry it
        names updated, title/summary/body replaced) and it leaves the queue.

        Validated before anything changes; then taken from the queue (a cycle cannot
        claim it meanwhile), then written; a failed write puts it back as pending.
        """
        found = await self._pending(suggestion_id)
        _field("title", lambda: check_knowledge_title(found.title))
        _field("summary", lambda: check_knowledge_summary(found.summary))
        self._body(found.body)
        if found.action == "update" and not found.kid:
            raise KnowledgeError(f"知识建议 #{suggestion_id} 是更新建议，却没有给出 kid")
        moment = now or _utcnow()
        if not await self.repo.take_suggestion(suggestion_id, moment):
            raise KnowledgeError(f"知识建议 #{suggestion_id} 刚被处理或认领，请刷新后再看")
        try:
            if found.action == "update" and found.kid:
                return await self.update(
                    found.kid,
                    title=found.title,
                    summary=found.summary,
                    body=found.body,
                    now=moment,
                )
            return await self.create(
                title=found.title, summary=found.summary, body=found.body, now=moment
            )
        except BaseException:
            await self.repo.untake_suggestion(suggestion_id)
            raise

    async def reject_suggestion(self, suggestion_id: int, *, now: datetime | None = None) -> None:
        """An operator rejects a pending suggestion: it leaves the queue unwritten (kept
        as done for a day, so the suggester's rate limit still counts it)."""
        await self._pending(suggestion_id)
        if not await self.repo.take_suggestion(suggestion_id, now or _utcnow()):
            raise KnowledgeError(f"知识建议 #{suggestion_id} 刚被处理或认领，请刷新后再看")

    # ------------------------------------------------------------------ grants

    @staticmethod
    def _node(node: str) -> str:
        if node not in GRANTABLE_NODES:
            raise KnowledgeError(
                f"未知权限节点 {node!r}；可授予: {', '.join(sorted(GRANTABLE_NODES))}"
            )
        return node

    @staticmethod
    def _user(user_id: str) -> str:
        user = _field("user", lambda: check_text(user_id.strip(), max_chars=MAX_ID_CHARS))
        if not user or any(ch.isspace() for ch in user):
            raise KnowledgeError(f"用户 ID 不合法: {user_id!r}")
        return user

    async def grant(
        self, user_id: str, node: str = KNOWLEDGE_NODE, *, by: str, now: datetime | None = None
    ) -> bool:
        """True when newly granted (False: already held)."""
        return await self.repo.grant(
            self._user(user_id), self._node(node), by=by, now=now or _utcnow()
        )

    async def revoke(self, user_id: str, node: str = KNOWLEDGE_NODE) -> bool:
        """True when it was held."""
        return await self.repo.revoke(self._user(user_id), self._node(node))

    async def grants(self) -> list[tuple[str, str, str, datetime]]:
        return await self.repo.grants()
