"""The memory's trail: who recalled a memory, who changed it.

Pure: the actor of the current task (a context variable, so that every write path —
tools, /memory, CLI, web, extraction, L3, import — names its writer once at its entry
and the storage layer hands it to the database in the writing transaction, where the
triggers of ``sql/functions/trail.sql`` record it), the records the trail reads
back, and the cleaning of a query before it is logged (the ONE redaction, cut).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from amrita_memory_pg.domain.records import SearchHit
from amrita_memory_pg.domain.redact import redact

ActorKind = Literal["person", "llm", "extraction", "l3", "import", "system"]
ACTOR_KINDS: tuple[ActorKind, ...] = ("person", "llm", "extraction", "l3", "import", "system")
#: the kinds refused on a paused partition (SQLSTATE AMZ01)
AUTOMATIC_KINDS = frozenset({"llm", "extraction", "l3"})
#: the automatic writers whose change of what a memory says makes it theirs (its origin):
#: extraction then no longer replaces it. A person's change makes it source = user.
OWNING_KINDS = frozenset({"llm", "l3"})


def ownership_note(previous: str, kind: str) -> str:
    """The note on the change that moved a memory to ``kind`` (shown in its history)."""
    return f"归属：{previous} → {kind}"


Surface = Literal["tool", "command", "cli", "web", "l3", "inject", "relevant"]
SURFACES: tuple[Surface, ...] = ("tool", "command", "cli", "web", "l3", "inject", "relevant")

#: a logged query is cut to this many characters (it is a hint, not a transcript)
QUERY_CHARS = 200


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is writing: a kind and an id (a person's user id, a chat key, a cycle)."""

    kind: ActorKind
    id: str | None = None

    def setting(self) -> str:
        """``kind:id``, the value of ``amrita_memory.actor`` (ids may hold ':')."""
        return f"{self.kind}:{self.id or ''}"


_ACTOR: contextvars.ContextVar[Actor | None] = contextvars.ContextVar(
    "amrita_memory_actor", default=None
)


def current_actor() -> Actor | None:
    """The actor set by the innermost :func:`acting` of this task (None: not said)."""
    return _ACTOR.get()


@contextlib.contextmanager
def acting(actor: Actor) -> Iterator[Actor]:
    """Writes inside this block are recorded as ``actor``'s (asyncio tasks started
    inside inherit it)."""
    token = _ACTOR.set(actor)
    try:
        yield actor
    finally:
        _ACTOR.reset(token)


def set_actor(actor: Actor | None) -> None:
    """Name the writer for the rest of this context: a CLI process names its operator
    once, before its event loop starts (the loop's tasks inherit it)."""
    _ACTOR.set(actor)


def parse_actor(value: str) -> Actor:
    """``kind:id`` back into an :class:`Actor`; an unknown kind is ``system``."""
    kind, _, ident = value.partition(":")
    if kind not in ACTOR_KINDS:
        return Actor("system", value or None)
    return Actor(kind, ident or None)


def log_query(text: str | None, limit: int = QUERY_CHARS) -> str | None:
    """A query as it may be logged: redacted (credentials never reach the log), one
    line, at most ``limit`` characters; None for nothing."""
    if not text:
        return None
    flat = " ".join(redact(text).split())
    if not flat:
        return None
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Recall:
    """Who is recalling, for the access log: the chat, the speaker, the surface."""

    surface: Surface
    chat_key: str | None = None
    who: str | None = None


@dataclass(frozen=True, slots=True)
class RecallLog:
    """What a recalling search writes to the access log, and whether it writes at all."""

    recall: Recall
    #: the search text, redacted and cut (:func:`log_query`)
    query: str | None
    #: recalls kept per memory (``[trail] access_per_memory``)
    keep: int
    #: ``[trail] access_log``: off = the pause is still honoured, nothing logged
    log: bool


@dataclass(frozen=True, slots=True)
class Recalled:
    """What a recalling search found: the hits, or that the partition is paused (no hits,
    nothing logged); ``log_error`` when the access log failed (the hits stand)."""

    hits: list[SearchHit]
    paused: bool = False
    log_error: str | None = None
    #: False: the hits are not logged yet (searched on a replica: the caller logs them)
    logged: bool = True


@dataclass(frozen=True, slots=True)
class AccessEntry:
    """One logged recall of a memory."""

    partition_key: str
    memory_id: str
    seq: int
    at: datetime
    surface: str
    chat_key: str | None
    who: str | None
    query: str | None
    score: float | None


@dataclass(frozen=True, slots=True)
class ChangeEntry:
    """One recorded change of a memory; ``before``/``after`` hold the shown fields
    (content, tags, importance, category, scope, source), content redacted."""

    partition_key: str
    memory_id: str
    seq: int
    at: datetime
    actor: Actor
    op: str
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    note: str | None

    def changed_fields(self) -> list[str]:
        """The fields that differ between before and after (all of one side when the
        other is missing), in a stable order."""
        keys = ("content", "tags", "importance", "category", "scope", "source")
        if self.before is None or self.after is None:
            side = self.after if self.before is None else self.before
            return [k for k in keys if side and side.get(k) not in (None, [], "")]
        return [k for k in keys if self.before.get(k) != self.after.get(k)]


def redacted_fields(fields: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A history side with its content through the ONE redaction (display, not storage:
    the memory table itself holds the same text)."""
    if fields is None:
        return None
    shown = dict(fields)
    if isinstance(shown.get("content"), str):
        shown["content"] = redact(shown["content"])
    return shown
