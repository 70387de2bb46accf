"""Automatic extraction: a finished session's chat lines and the scope's
memories go to a model with a jinja2 template; its answer, validated whole by a
pydantic model, atomically replaces the memories the previous extraction made there.

When a session has expired (no message for ``session_idle_minutes``; the bot's job
calls :meth:`Extractor.run_expired`) or on ``/memory extract`` / ``amrita-memory
extract``: the lines after the previous run (at most ``max_messages``) and every
memory of the session's partition are rendered into the prompt; the answer must be a
JSON object ``{"memories": [{category, content, importance}, …]}``. Anything else —
not JSON, unknown or missing fields, a category that is not one of the four, an
importance outside 1–10, an entry over ``max_entry_chars``, more than ``max_entries``
entries, an answer over ``max_output_chars`` — rejects the answer whole, with the
reason logged and recorded; the previous auto set stays. The accepted entries are
embedded in ONE batch call, then the old auto rows are deleted and the new ones
inserted in ONE transaction (``MemoryRepository.replace_auto``), together with the run
record: a failed embedding or insert leaves the old set. Only rows extraction made
(``origin = 'extraction'``, still ``source = 'auto'``) are replaced: the chat model's
writes, imported memories, the L3 loop's rows and anything a person added or edited
are never touched (sql/functions/origin.sql).

Every run is recorded in ``extraction_run`` with its token usage and the newest chat
line it read, so the next run starts after it; a failed run (HTTP, database) is
retried at the next check, a rejected one is not (the same lines would be rejected
again).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

import jinja2
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.errors import (
    AmritaMemoryError,
    EmbeddingError,
    LeaseHeld,
    LlmError,
    MemoryPaused,
    PartitionFull,
)
from amrita_memory_pg.domain.keys import scope_of_key
from amrita_memory_pg.domain.lineage import Candidate, inferred_sources, line_ref
from amrita_memory_pg.domain.ports import ChatModel, TokenUsage
from amrita_memory_pg.domain.records import CATEGORY_NAMES, SOURCE_NAMES, Category, ChatLine
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.domain.validation import text_problem
from amrita_memory_pg.services.leases import Leases
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.settings import ExtractionSettings, LlmSettings, Settings
from amrita_memory_pg.storage.bot_memories import BotMemoryRepository, RunRecord

log = logging.getLogger(__name__)

BUILTIN_TEMPLATE = Path(__file__).resolve().parents[1] / "prompts" / "extraction.md.jinja2"
Trigger = Literal["expiry", "command", "cli"]
Status = Literal["ok", "rejected", "failed", "empty", "disabled", "held"]


class ExtractedEntry(BaseModel):
    """One entry of the model's answer; anything else in it refuses the whole answer."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    category: Category
    content: Annotated[str, Field(min_length=1)]
    importance: Annotated[int, Field(ge=1, le=10)]


class ExtractionAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    memories: list[ExtractedEntry]


class Rejected(AmritaMemoryError):
    """The model's answer is unusable; ``reason`` says why (logged and recorded)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _strip_fence(text: str) -> str:
    """```json … ``` → its inside (models wrap JSON in a code fence despite being told not to)."""
    body = text.strip()
    if body.startswith("```"):
        first_newline = body.find("\n")
        body = body[first_newline + 1 :] if first_newline >= 0 else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
    return body.strip()


def parse_answer(text: str | None, limits: ExtractionSettings) -> list[ExtractedEntry]:
    """The entries of an answer, or :class:`Rejected` naming the first problem."""
    if text is None or not text.strip():
        raise Rejected("the answer is empty")
    if len(text) > limits.max_output_chars:
        raise Rejected(
            f"the answer has {len(text)} characters, over max_output_chars {limits.max_output_chars}"
        )
    body = _strip_fence(text)
    try:
        raw: Any = json.loads(body)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise Rejected(f"the answer is not JSON: {exc}") from None
    if isinstance(raw, list):  # a bare list of entries is the same answer
        raw = {"memories": raw}
    if isinstance(raw, dict) and isinstance(raw.get("memories"), list):
        count = len(raw["memories"])
        if count > limits.max_entries:
            raise Rejected(f"{count} entries, over max_entries {limits.max_entries}")
    try:
        answer = ExtractionAnswer.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the answer"
        raise Rejected(f"{where}: {' '.join(str(first['msg']).split())}") from None
    for n, entry in enumerate(answer.memories):
        if len(entry.content) > limits.max_entry_chars:
            raise Rejected(
                f"memories.{n}.content has {len(entry.content)} characters, over max_entry_chars {limits.max_entry_chars}"
            )
        problem = text_problem(entry.content)
        if problem is not None or not entry.content.strip():
            raise Rejected(f"memories.{n}.content cannot be stored: {problem or 'blank'}")
    return list(answer.memories)


def endpoint(settings: Settings) -> LlmSettings:
    """The extraction model's endpoint: its own keys, each falling back to ``[llm]``."""
    own = settings.extraction
    llm = settings.llm
    return LlmSettings(
        base_url=own.base_url or llm.base_url,
        model=own.model or llm.model,
        api_key=own.api_key if own.api_key.get_secret_value() else llm.api_key,
        timeout_seconds=own.timeout_seconds,
    )


def load_template(settings: ExtractionSettings) -> jinja2.Template:
    path = Path(settings.template_file).expanduser() if settings.template_file else BUILTIN_TEMPLATE
    env = jinja2.Environment(
        autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    return env.from_string(path.read_text(encoding="utf-8"))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one extraction did (``status`` ok / rejected / failed / empty / disabled /
    held: another process of the fleet is extracting this session)."""

    session_key: str
    partition_key: str
    status: Status
    reason: str | None = None
    entries: int = 0
    replaced: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)


#: the lease key of the session-expiry pass (a session key is never this)
EXPIRY_LEASE = "expiry"

#: the reason recorded for a run on a paused scope
PAUSED_REASON = "the memory of this scope is paused: nothing extracted (the lines are marked read)"


class Extractor:
    """Runs extractions on one store with one chat model (None: extraction unavailable)."""

    def __init__(
        self,
        memories: MemoryService,
        repo: BotMemoryRepository,
        model: ChatModel | None,
        settings: Settings,
        leases: Leases | None = None,
    ) -> None:
        self.memories = memories
        #: the fleet's leases: one extraction per session across processes,
        #: one session-expiry pass at a time
        self.leases = leases
        self.repo = repo
        self.model = model
        self.settings = settings
        self.limits = settings.extraction
        self.model_name = endpoint(settings).model or None
        self._template: jinja2.Template | None = None

    @property
    def template(self) -> jinja2.Template:
        if self._template is None:
            self._template = load_template(self.limits)
        return self._template

    def render(
        self, partition_key: str, lines: Sequence[ChatLine], memories: Sequence[Any], now: datetime
    ) -> str:
        scope = scope_of_key(partition_key)
        label = {"user": "个人", "group": "群", "global": "全局"}[scope]
        return self.template.render(
            scope_label=f"{label} {partition_key}",
            now=now.isoformat(timespec="seconds"),
            max_entries=self.limits.max_entries,
            max_entry_chars=self.limits.max_entry_chars,
            memories=[
                {
                    "source_name": SOURCE_NAMES.get(m.source, m.source),
                    "category": CATEGORY_NAMES.get(m.category or "", m.category),
                    "importance": m.importance,
                    "content": m.content,
                }
                for m in memories
            ],
            lines=[
                {
                    "created_at": line.created_at.isoformat(timespec="seconds"),
                    "role": line.role,
                    "user_id": line.user_id,
                    "text": line.text,
                }
                for line in lines
            ],
        )

    async def extract(
        self, session_key: str, *, trigger: Trigger = "command", now: datetime | None = None
    ) -> Outcome:
        """Extract the session's unread lines into its partition; never raises for the
        model's, the embedder's or a full partition's failures (they are the outcome).
        Another process extracting the same session: status ``held``, nothing done.
        Counted in ``/metrics`` by status, its tokens by kind."""
        outcome = await self._extract_once(session_key, trigger, now or datetime.now(UTC))
        metrics.record_extraction(outcome.status)
        metrics.record_tokens(
            "extraction", outcome.usage.prompt_tokens, outcome.usage.completion_tokens
        )
        return outcome

    async def _extract_once(self, session_key: str, trigger: Trigger, now: datetime) -> Outcome:
        partition = session_key
        if self.model is None:
            return Outcome(
                session_key,
                partition,
                "disabled",
                "no model configured ([extraction] / [llm] base_url and model)",
            )
        if self.leases is None:
            return await self._extract(session_key, self.model, trigger, now)
        try:
            async with self.leases.hold("extraction", session_key):
                return await self._extract(session_key, self.model, trigger, now)
        except LeaseHeld as held:
            log.info("extraction of %s held by %s", session_key, held.owner)
            return Outcome(session_key, partition, "held", f"held by {held.owner}")

    async def _extract(
        self, session_key: str, model: ChatModel, trigger: Trigger, now: datetime
    ) -> Outcome:
        partition = session_key
        lines = await self.repo.unread_lines(session_key, self.limits.max_messages)
        if not lines:
            return Outcome(
                session_key, partition, "empty", "no new chat lines since the last extraction"
            )
        run = RunRecord(
            session_key=session_key,
            partition_key=partition,
            trigger=trigger,
            status="ok",
            reason=None,
            entries=0,
            chat_until_id=lines[-1].id,
            model=self.model_name,
            usage=TokenUsage(),
            started_at=now,
            finished_at=now,
        )
        trail = self.memories.trail
        if trail is not None and await trail.is_paused(partition):
            # a paused scope is not written by automatic processes; the lines
            # are marked read (a rejected run), so they are not retried after resuming.
            return await self._finish(run, "rejected", PAUSED_REASON, run.usage)
        with acting(Actor("extraction", session_key)):  # read on the primary (storage/reads.py)
            records, _total = await self.memories.list_page(
                partition, limit=max(self.settings.per_session_memory_limit, 1), offset=0
            )
        prompt = self.render(partition, lines, records, now)
        usage = TokenUsage()
        try:
            result = await model.complete([{"role": "system", "content": prompt}])
            usage = result.usage
            content = result.message.get("content")
            entries = parse_answer(content if isinstance(content, str) else None, self.limits)
            vectors = (
                await self.memories.embedder.embed_passages([e.content for e in entries])
                if entries
                else []
            )

            async def record_ok(conn: Any) -> None:
                done = datetime.now(UTC)
                ok = replace(run, entries=len(entries), usage=usage, finished_at=done)
                await self.repo.record_run(conn, ok)

            with acting(Actor("extraction", session_key)):
                replaced, inserted = await self._replace(
                    partition, entries, vectors, now, record_ok, lines
                )
        except MemoryPaused:
            return await self._finish(run, "rejected", PAUSED_REASON, usage)
        except Rejected as exc:
            return await self._finish(run, "rejected", exc.reason, usage)
        except PartitionFull as exc:
            reason = f"the partition would exceed its cap of {exc.limit} memories (manual entries included)"
            return await self._finish(run, "rejected", reason, usage)
        except (LlmError, EmbeddingError) as exc:
            unread = replace(run, chat_until_id=None)  # the lines stay unread: tried again
            return await self._finish(unread, "failed", str(exc) or type(exc).__name__, usage)
        log.info(
            "extraction of %s: %d auto memories replaced by %d (%d tokens)",
            session_key,
            replaced,
            inserted,
            usage.total_tokens,
        )
        return Outcome(session_key, partition, "ok", None, inserted, replaced, usage)

    async def _replace(
        self,
        partition: str,
        entries: Sequence[Any],
        vectors: Sequence[Any],
        now: datetime,
        record_ok: Any,
        lines: Sequence[ChatLine],
    ) -> tuple[int, int]:
        """The replacement of the partition's auto memories, in one transaction, each
        entry's lineage with it: the lines of the run it shares a distinctive word with
        (domain/lineage.py; none shared, none recorded: a chat line is never a source by
        default)."""
        candidates = [Candidate(line_ref(line.session_key, line.id), line.text) for line in lines]
        return await self.memories.repo.replace_auto(
            partition,
            scope_of_key(partition),
            [(e.content, e.category, e.importance) for e in entries],
            vectors,
            fingerprint=self.memories.embedder.fingerprint,
            provider=self.memories.embedder.provider,
            now=now,
            before_commit=record_ok,
            tokens=[search_tokens(e.content) for e in entries],
            sources=[inferred_sources(e.content, candidates, fallback=False) for e in entries],
        )

    async def _finish(
        self,
        run: RunRecord,
        status: Literal["rejected", "failed"],
        reason: str,
        usage: TokenUsage,
    ) -> Outcome:
        log.warning(
            "extraction of %s %s: %s (the previous auto memories stay)",
            run.session_key,
            status,
            reason,
        )
        done = datetime.now(UTC)
        ended = replace(run, status=status, reason=reason[:2000], usage=usage, finished_at=done)
        await self.repo.record_run(self.repo.pool, ended)
        return Outcome(run.session_key, run.partition_key, status, reason, 0, 0, usage)

    async def run_expired(self, *, now: datetime | None = None, limit: int = 20) -> list[Outcome]:
        """The session job: unload the scopes of chats whose session is over, then (when
        ``[extraction] enabled``) extract every session silent for
        ``session_idle_minutes`` that has unread lines, oldest first, at most ``limit``."""
        now = now or datetime.now(UTC)
        if self.leases is None:
            return await self._run_expired(now, limit)
        try:
            async with self.leases.hold("extraction", EXPIRY_LEASE):
                return await self._run_expired(now, limit)
        except LeaseHeld as held:
            log.info("session expiry pass held by %s; next interval", held.owner)
            return []

    async def _run_expired(self, now: datetime, limit: int) -> list[Outcome]:
        idle_since = now - timedelta(minutes=self.limits.session_idle_minutes)
        await self.repo.expire_loaded(idle_since)
        outcomes: list[Outcome] = []
        if not self.limits.enabled or self.model is None:
            return outcomes
        for session in await self.repo.expired_sessions(idle_since, limit):
            try:
                outcomes.append(await self.extract(session.session_key, trigger="expiry", now=now))
            except Exception:  # one session's failure must not stop the others
                log.exception("extraction of %s failed", session.session_key)
        return outcomes
