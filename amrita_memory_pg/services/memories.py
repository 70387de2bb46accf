"""L2 memories as every surface uses them: texts in, records and scored hits out."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NotRequired, TypedDict, Unpack

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.decay import DecayPolicy
from amrita_memory_pg.domain.errors import FingerprintMismatch, MemoryPaused, ProtectedMemory
from amrita_memory_pg.domain.fusion import reference_scored, relevant_hits
from amrita_memory_pg.domain.lineage import Cascade, Ref, memory_ref
from amrita_memory_pg.domain.ports import Embedder, Vector
from amrita_memory_pg.domain.records import (
    Category,
    MemoryQuery,
    MemoryRecord,
    NewMemory,
    Ranking,
    Scope,
    SearchFilter,
    SearchHit,
    SearchMode,
    Source,
    SweepReport,
)
from amrita_memory_pg.domain.tokens import query_tokens, search_tokens
from amrita_memory_pg.domain.trail import Recall
from amrita_memory_pg.settings import DecaySettings, Settings
from amrita_memory_pg.storage.memories import AddResult, MemoryRepository, SweepParams

if TYPE_CHECKING:
    from amrita_memory_pg.services.trail import TrailService


def _utcnow() -> datetime:
    return datetime.now(UTC)


#: passages embedded ahead of a transaction (:meth:`MemoryService.embedded`), by text
_AHEAD: contextvars.ContextVar[dict[str, Vector] | None] = contextvars.ContextVar(
    "amrita_memory_passages_ahead", default=None
)


class MemoryFields(TypedDict):
    """A memory to write as :meth:`MemoryService.add` and :meth:`~MemoryService.write` take
    it, by keyword: the one spelling of the argument list (defaults in ``_new``)."""

    partition_key: str
    scope: Scope
    content: str
    #: default ()
    tags: NotRequired[Sequence[str]]
    #: default 5
    importance: NotRequired[int]
    category: NotRequired[Category | None]
    #: default "auto"
    source: NotRequired[Source]
    author: NotRequired[str | None]
    #: default: the current UTC time
    now: NotRequired[datetime | None]


def decay_policy(decay: DecaySettings) -> DecayPolicy:
    """The ``[decay]`` section as the pure formulas' parameters."""
    return DecayPolicy(
        half_life_days=decay.half_life_days,
        importance_boost=decay.importance_boost,
        score_floor=decay.score_floor,
        short_term_days=float(decay.short_term_days),
        long_term_days=float(decay.long_term_days),
        enabled=decay.enabled,
        overfetch=decay.overfetch,
    )


class MemoryService:
    """Embeds, then writes or searches through :class:`MemoryRepository`.

    Every method takes ``now`` (default: the current UTC time) so that tests and the
    L3 loop control the clock.
    """

    def __init__(
        self,
        repo: MemoryRepository,
        embedder: Embedder,
        settings: Settings,
        *,
        trail: TrailService | None = None,
    ) -> None:
        self.repo = repo
        #: the access log and the pause; None: searches log nothing
        self.trail = trail
        self.embedder = embedder
        self.settings = settings
        self.policy = decay_policy(settings.decay)

    async def add(self, **fields: Unpack[MemoryFields]) -> MemoryRecord:
        """Embed, then insert under the partition cap; raises ``PartitionFull``.

        The embedding happens first, outside any transaction: if it fails, nothing is
        written and no lock was ever taken.
        """
        with metrics.timed(metrics.WRITE_SECONDS, "add"):
            return await self.repo.add(await self._new(fields), self.embedder.provider)

    async def write(self, **fields: Unpack[MemoryFields]) -> AddResult:
        """:meth:`add` for the chat tool: idempotent within ``write_dedup_seconds``.

        A write whose reply was lost may be retried by the LLM; an identical one (same
        partition, scope, content, author, source) made within the window returns that
        memory (``duplicate``) instead of a second row. Embedding first, as in :meth:`add`.
        """
        with metrics.timed(metrics.WRITE_SECONDS, "write"):
            return await self.repo.write(
                await self._new(fields),
                self.embedder.provider,
                dedup_seconds=self.settings.write_dedup_seconds,
            )

    async def _new(self, fields: MemoryFields) -> NewMemory:
        """The memory to write, the defaults applied: the content embedded (first, outside
        any transaction: if it fails, nothing is written and no lock was ever taken; in an
        :meth:`embedded` block, by its one request) and tokenized."""
        content = fields["content"]
        vector = await self._passage(content)
        return NewMemory(
            partition_key=fields["partition_key"],
            scope=fields["scope"],
            content=content,
            vector=vector,
            fingerprint=self.embedder.fingerprint,
            now=fields.get("now") or _utcnow(),
            author=fields.get("author"),
            tags=tuple(fields.get("tags", ())),
            importance=fields.get("importance", 5),
            category=fields.get("category"),
            source=fields.get("source", "auto"),
            tokens=tuple(search_tokens(content)),
        )

    @contextlib.asynccontextmanager
    async def embedded(self, texts: Sequence[str]) -> AsyncIterator[None]:
        """Embed ``texts`` now, in one request, and let this task's updates and merges
        inside the block take their vectors from it: several changes that must commit in
        one transaction (the loop's batch) then hold no lock during an HTTP call, and an
        embedding failure raises here, before anything is written."""
        wanted = list(dict.fromkeys(texts))
        vectors = await self.embedder.embed_passages(wanted) if wanted else []
        outer = _AHEAD.get()
        token = _AHEAD.set({**(outer or {}), **dict(zip(wanted, vectors, strict=True))})
        try:
            yield
        finally:
            _AHEAD.reset(token)

    async def _passage(self, text: str) -> Vector:
        ahead = _AHEAD.get()
        if ahead is not None and text in ahead:
            return ahead[text]
        (vector,) = await self.embedder.embed_passages([text])
        return vector

    async def _reembedded(
        self, current: MemoryRecord, content: str | None
    ) -> tuple[Vector | None, list[str] | None]:
        """The new vector and search tokens when ``content`` differs from the stored text;
        (None, None) otherwise: an unchanged text is never sent to the embedding service."""
        if content is None or content == current.content:
            return None, None
        return await self._passage(content), search_tokens(content)

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
        by_person: bool = False,
        cascade: bool = False,
    ) -> MemoryRecord | None:
        """Change some fields; the vector is recomputed only when the content changes.

        None when the id is not in the partition. Unless ``by_person`` (a person's command)
        and while ``protect_manual_memories`` is on, a ``source=user`` memory is refused
        with :class:`ProtectedMemory` — by the database, so no automatic caller bypasses it.
        ``cascade`` (a person's or the chat model's change of a fact): what was derived
        from the memory is withheld until the L3 loop derives it again from the new text.
        """
        current = await self.repo.get(partition_key, memory_id)
        if current is None:
            return None
        vector, tokens = await self._reembedded(current, content)
        return await self.repo.update(
            partition_key,
            memory_id,
            content=content if vector is not None else None,
            tags=tags,
            importance=importance,
            category=category,
            vector=vector,
            fingerprint=self.embedder.fingerprint,
            now=now or _utcnow(),
            tokens=tokens,
            protect_user=self.protects(by_person),
            cascade_from=current.content if cascade else None,
        )

    async def add_tags(
        self,
        partition_key: str,
        memory_id: str,
        tags: Sequence[str],
        *,
        now: datetime | None = None,
    ) -> MemoryRecord | None:
        """Add tags (flags) to a memory, ``source=user`` ones included: a flag keeps every
        word a person wrote and only adds (the L3 loop may flag manual entries, never
        rewrite them). None when the id is not in the partition."""
        current = await self.repo.get(partition_key, memory_id)
        if current is None:
            return None
        return await self.repo.update(
            partition_key,
            memory_id,
            content=None,
            tags=tuple(dict.fromkeys((*current.tags, *tags))),
            importance=None,
            category=None,
            vector=None,
            fingerprint=self.embedder.fingerprint,
            now=now or _utcnow(),
            protect_user=False,
            take_over=False,  # a flag adds to the memory, it does not make it the flagger's
        )

    def protects(self, by_person: bool) -> bool:
        """Whether a change by this caller must spare ``source=user`` memories."""
        return self.settings.protect_manual_memories and not by_person

    async def delete(self, partition_key: str, memory_id: str, *, by_person: bool = False) -> bool:
        """Delete one memory of the partition; a foreign or unknown id deletes nothing.

        ``source=user`` memories are refused (:class:`ProtectedMemory`) unless ``by_person``,
        as for :meth:`update`.
        """
        return await self.repo.delete(
            partition_key, memory_id, protect_user=self.protects(by_person)
        )

    async def delete_cascading(
        self,
        partition_key: str,
        memory_id: str,
        *,
        by_person: bool = False,
        now: datetime | None = None,
    ) -> Cascade | None:
        """:meth:`delete` with the cascade of what was derived from the memory (made from
        it alone: deleted; from several: withheld for the L3 loop to derive again without
        it). None when the id is not in the partition."""
        current = await self.repo.get(partition_key, memory_id)
        if current is None:
            return None
        return await self.repo.delete_cascading(
            partition_key,
            memory_id,
            protect_user=self.protects(by_person),
            content=current.content,
            now=now or _utcnow(),
        )

    async def plan_delete(self, partition_key: str, memory_id: str) -> Cascade:
        """What :meth:`delete_cascading` would do (a dry run: nothing written)."""
        return await self.repo.plan_cascade(
            [memory_ref(partition_key, memory_id)], mode="delete", now=_utcnow()
        )

    async def forget(
        self,
        partition_key: str,
        memory_ids: Sequence[str],
        *,
        requested_by: str,
        lines: Sequence[Ref] = (),
        by_person: bool = False,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> Cascade:
        """Forget memories with their cascade and every trace, recorded in the erasure
        ledger (see ``sql/functions/lineage.sql``). Unless ``by_person``, a
        ``source=user`` memory is refused (:class:`ProtectedMemory`) while
        ``protect_manual_memories`` is on, as for a delete."""
        if self.protects(by_person):
            for memory_id in memory_ids:
                current = await self.repo.get(partition_key, memory_id)
                if current is not None and current.source == "user":
                    raise ProtectedMemory(memory_id)
        return await self.repo.forget(
            partition_key,
            memory_ids,
            lines=lines,
            requested_by=requested_by,
            now=now or _utcnow(),
            dry_run=dry_run,
        )

    async def erase(
        self,
        partition_key: str,
        *,
        requested_by: str,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> Cascade:
        """Erase a partition in every table, recorded in the erasure ledger; the cascade's
        rows are the receipt."""
        return await self.repo.erase(
            partition_key, requested_by=requested_by, now=now or _utcnow(), dry_run=dry_run
        )

    async def list_filtered(
        self,
        partition_key: str,
        *,
        limit: int,
        offset: int = 0,
        category: str | None = None,
        min_importance: int | None = None,
    ) -> tuple[list[MemoryRecord], int]:
        """One page of the memories of a category and/or a minimum importance, and the total."""
        if category is None and min_importance is None:
            return await self.repo.list_page(partition_key, limit=limit, offset=offset)
        return await self.repo.list_filtered(
            partition_key,
            limit=limit,
            offset=offset,
            category=category,
            min_importance=min_importance,
        )

    async def merge(
        self,
        partition_key: str,
        keep_id: str,
        merge_ids: Sequence[str],
        *,
        content: str | None = None,
        tags: Sequence[str] | None = None,
        importance: int | None = None,
        now: datetime | None = None,
    ) -> tuple[MemoryRecord, list[str]] | None:
        """Keep one memory (optionally rewritten) and delete the others, in one
        transaction; the vector is recomputed only when the content changes."""
        current = await self.repo.get(partition_key, keep_id)
        if current is None:
            return None
        vector, tokens = await self._reembedded(current, content)
        return await self.repo.merge(
            partition_key,
            keep_id,
            merge_ids,
            content=content if vector is not None else None,
            tags=tags,
            importance=importance,
            vector=vector,
            fingerprint=self.embedder.fingerprint,
            now=now or _utcnow(),
            tokens=tokens,
            # A kept source=user row may gain the group's tags, never new words or weight.
            protect_keep=self.protects(False)
            and not (vector is None and importance in (None, current.importance)),
            protect_merged=self.protects(False),
        )

    async def get(self, partition_key: str, memory_id: str) -> MemoryRecord | None:
        return await self.repo.get(partition_key, memory_id)

    async def count(self, partition_key: str) -> int:
        return await self.repo.count(partition_key)

    async def list_page(
        self, partition_key: str, *, limit: int, offset: int = 0
    ) -> tuple[list[MemoryRecord], int]:
        """One page in (created_at, id) order — deterministic (reference W6) — and the total."""
        return await self.repo.list_page(partition_key, limit=limit, offset=offset)

    async def find_by_prefix(self, partition_key: str, prefix: str) -> list[MemoryRecord]:
        """Exact id first; otherwise every id of the partition starting with ``prefix``."""
        return await self.repo.find_by_prefix(partition_key, prefix)

    def ranking(self, mode: SearchMode | None, query: str) -> Ranking:
        """How a search for ``query`` ranks: ``mode`` or the configured default, the
        query's search tokens (the same function as the stored ones), the fusion."""
        retrieval = self.settings.retrieval
        return Ranking(
            mode=mode or retrieval.default_mode,
            tokens=query_tokens(query),
            fusion=retrieval.fusion,
            rrf_k=retrieval.rrf_k,
            keyword_weight=retrieval.keyword_weight,
        )

    async def search(
        self,
        partition_key: str,
        query: str,
        *,
        top_k: int = 5,
        importance: tuple[int, int] | None = None,
        scope: Scope | None = None,
        tags: Sequence[str] | None = None,
        category: str | None = None,
        mode: SearchMode | None = None,
        now: datetime | None = None,
        recall: Recall | None = None,
    ) -> list[SearchHit]:
        """The true top_k by decay score; relevance by ``mode`` (default: the configured
        ``retrieval.default_mode``). Keyword mode embeds nothing, so it also works while
        the embedding service is down.

        ``recall`` (who searches: the chat tool, /memory, the CLI) logs the hits in the
        access log and honours a paused partition: :class:`MemoryPaused`, no hits. Without
        it (an operator's own view) nothing is logged and a pause is not checked.

        With a read replica (``[database] read_url``) the search runs there unless it
        must see this process's own write (``storage/reads.py``: the partition written
        within ``read_own_writes_seconds``, the L3 loop, extraction); its access log is
        then written to the primary behind the read (``TrailService.log_behind``).

        The pause is checked FIRST — before an embedding request (one lookup: a paused
        partition's query never reaches the embedding service) and again by the search
        statement itself, before it searches — and a failing check raises (it is never
        read as "not paused"). When no request is needed (keyword mode, a cached query)
        and the backend's search statement checks the pause itself (pgvector), the read
        stays one round trip (a read's latency is mostly its round trips)."""
        trail = self.trail if recall is not None else None
        ranking = self.ranking(mode, query)
        with metrics.timed(metrics.SEARCH_SECONDS, ranking.mode):
            vector = None if ranking.mode == "keyword" else self.embedder.cached_query(query)
            requests = ranking.mode != "keyword" and vector is None
            first = requests or not self.repo.recalls
            if first and trail is not None and await trail.is_paused(partition_key):
                raise MemoryPaused(partition_key)
            if requests:
                vector = await self.embedder.embed_query(query)
            where = SearchFilter(
                importance_min=importance[0] if importance else None,
                importance_max=importance[1] if importance else None,
                scope=scope,
                tags=tuple(tags) if tags else None,
                category=category,
            )
            at = now or _utcnow()
            q = MemoryQuery(
                partition_key,
                vector,
                at,
                top_k=top_k,
                ranking=ranking,
                where=where,
                decay=self.policy,
            )
            try:
                if recall is not None and self.trail is not None:
                    # the pause check, the search and the access log in one round trip
                    done = await self.repo.recall(q, self.trail.recall_log(recall, query))
                    if done is not None:
                        if done.log_error is not None:
                            self.trail.recall_failed(partition_key, done.log_error)
                        if done.paused:
                            raise MemoryPaused(partition_key)
                        if not done.logged:  # searched on the replica: log on the primary
                            self.trail.log_behind(partition_key, done.hits, recall, query, now=at)
                        return self._as_hits(done.hits, ranking.mode)
                hits = self._as_hits(await self.repo.search(q), ranking.mode)
            except FingerprintMismatch as exc:
                dim = "?" if vector is None else str(len(vector))
                raise FingerprintMismatch(
                    f"the stored vectors and the configured model ({self.embedder.describe()}, "
                    f"dimension {dim}) differ: the embedding model changed — run "
                    "`amrita-memory reindex`, or configure the model the store was built with"
                ) from exc
            if (
                trail is not None
                and recall is not None
                and await trail.after_search(partition_key, hits, recall, query, now=at)
            ):
                raise MemoryPaused(partition_key)
            return hits

    def _as_hits(self, ranked: Sequence[SearchHit], mode: str) -> list[SearchHit]:
        """The relevant rows (hybrid cut-off), each with the reference's ``decay_score``
        and the ranking key as ``score``: the shown score means one thing in every mode."""
        return [reference_scored(h, self.policy, mode) for h in relevant_hits(ranked, mode)]

    async def sweep(
        self,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        max_batches: int | None = None,
        force: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> SweepReport:
        """Demote/purge what outlived its tier; off when ``[decay] enabled/sweep_enabled =
        false`` unless ``force``. ``source=user`` rows are spared while
        ``protect_manual_memories`` is on."""
        decay = self.settings.decay
        if not force and not (decay.enabled and decay.sweep_enabled):
            metrics.record_sweep_run("disabled")
            return SweepReport(scanned=0, demoted=0, purged=0, kept=0)
        params = SweepParams(
            short_term_days=float(decay.short_term_days),
            long_term_days=float(decay.long_term_days),
            batch_limit=decay.sweep_batch_limit,
            restart_clock_on_demote=decay.restart_clock_on_demote,
            # the sweep is an automatic process: it spares manual entries
            protect_user=self.protects(False),
        )
        report = await self.repo.sweep(
            params,
            now=now or _utcnow(),
            dry_run=dry_run,
            max_batches=max_batches,
            progress=progress,
        )
        if dry_run:
            metrics.record_sweep_run("dry_run")
        elif report.wrapped:
            metrics.record_sweep_run("complete", at=time.time())
        else:
            metrics.record_sweep_run("partial")
        return report
