"""The knowledge base for every surface: who may read it checked once, then the service
(which validates every field: ``KnowledgeError`` and its kinds go out for the edge)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from amrita_memory_pg.domain.knowledge import (
    KnowledgeEntry,
    KnowledgeHit,
    KnowledgeInfo,
    KnowledgeWindow,
    KnowledgeWrite,
    Suggestion,
)
from amrita_memory_pg.domain.records import SearchMode
from amrita_memory_pg.services.knowledge import DISABLED, NO_PERMISSION, KnowledgeService
from amrita_memory_pg.usecases.pause import PauseGate
from amrita_memory_pg.usecases.values import Refusal


class KnowledgeCases:
    """List, read, search, write and suggest knowledge entries; grant who may read.

    A chat reader is checked with :meth:`check_reader` before a read (refused: the
    reference's sentence, which names nothing); people managing the base (the admin
    page, the CLI) are not readers and are not checked.
    """

    def __init__(self, service: KnowledgeService, gate: PauseGate | None = None) -> None:
        self.service = service
        #: the pause of the partitions a suggestion comes from (automatic callers only)
        self.gate = gate or PauseGate(None)

    @property
    def max_chars(self) -> int:
        return self.service.max_chars

    @property
    def enabled(self) -> bool:
        return self.service.enabled

    @property
    def default_mode(self) -> SearchMode:
        return self.service.settings.retrieval.default_mode

    async def check_reader(self, user_id: str, roles: frozenset[str], *, in_group: bool) -> None:
        """:class:`Refusal` unless this chat user may read and the base is enabled
        (permission first: a refused reader learns nothing else)."""
        if not await self.service.can_read(user_id, roles, in_group=in_group):
            raise Refusal(NO_PERMISSION)
        self.check_enabled()

    def check_enabled(self) -> None:
        """:class:`Refusal` while the knowledge base is switched off (the chat's and the
        loop's tools; people manage it regardless)."""
        if not self.service.enabled:
            raise Refusal(DISABLED)

    async def entries(self) -> list[KnowledgeInfo]:
        return await self.service.entries()

    async def get(self, kid: str) -> KnowledgeEntry:
        """One entry with its body (``KnowledgeNotFound``: none)."""
        return await self.service.get(kid)

    async def read(self, kid: str, start: int | None, end: int | None) -> KnowledgeWindow:
        return await self.service.read(kid, start, end)

    async def search(
        self, query: str, top_k: int, *, mode: SearchMode | None = None
    ) -> list[KnowledgeHit]:
        return await self.service.search(query, top_k, mode=mode)

    async def create(
        self, *, title: str, summary: str, body: str, now: datetime | None = None
    ) -> KnowledgeWrite:
        return await self.service.create(title=title, summary=summary, body=body, now=now)

    async def update(self, kid: str, **fields: Any) -> KnowledgeWrite:
        """Change some fields (``title``, ``summary``, ``body``, ``start_line``,
        ``end_line``, ``now``: as :meth:`KnowledgeService.update`)."""
        return await self.service.update(kid, **fields)

    async def delete(self, kid: str) -> None:
        await self.service.delete(kid)

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
        partitions: Sequence[str] = (),
    ) -> tuple[int, int]:
        """Queue a suggestion (``kid``: the entry an update changes); (its id, how many
        are unhandled). ``partitions``: the chat's, whose pause refuses it (the chat
        model's suggestion carries what was said there, like its other writes)."""
        for key in partitions:
            await self.gate.check(key)
        return await self.service.suggest(
            author_id=author_id,
            action=action,
            title=title,
            summary=summary,
            body=body,
            reason=reason,
            kid=kid,
        )

    async def pending_suggestions(self, limit: int = 20) -> tuple[int, list[dict[str, Any]]]:
        """(how many are unhandled, the oldest ``limit`` of them)."""
        return await self.service.pending_suggestions(limit)

    async def claim_suggestions(self, cycle_id: int) -> list[Suggestion]:
        """Claim the pending suggestions for a running L3 cycle (done when it succeeds,
        released when it fails)."""
        return await self.service.claim_suggestions(cycle_id)

    async def suggestion(self, suggestion_id: int) -> Suggestion:
        """One suggestion with its body (``KnowledgeError``: gone)."""
        return await self.service.suggestion(suggestion_id)

    async def accept_suggestion(
        self, suggestion_id: int, *, now: datetime | None = None
    ) -> KnowledgeWrite:
        """Write what suggestion ``suggestion_id`` proposes (``KnowledgeError``: decided
        already, or claimed by a running cycle)."""
        return await self.service.accept_suggestion(suggestion_id, now=now)

    async def reject_suggestion(self, suggestion_id: int, *, now: datetime | None = None) -> None:
        await self.service.reject_suggestion(suggestion_id, now=now)

    async def grant(self, user_id: str, node: str, *, by: str) -> bool:
        return await self.service.grant(user_id, node, by=by)

    async def revoke(self, user_id: str, node: str) -> bool:
        return await self.service.revoke(user_id, node)

    async def grants(self) -> list[tuple[str, str, str, datetime]]:
        """Every granted permission: (user, node, by whom, when)."""
        return await self.service.grants()
