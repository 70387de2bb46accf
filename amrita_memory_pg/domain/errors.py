"""One error tree for the whole package.

Driver and HTTP errors are mapped to these at the boundary (``raise … from exc``) so
that callers — the CLI, the tool handlers, the NoneBot plugin — can turn any of them
into one clear sentence instead of a traceback.
"""

from __future__ import annotations

from datetime import datetime


class AmritaMemoryError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigError(AmritaMemoryError):
    """A configuration key is unknown or its value is not allowed."""


class DatabaseError(AmritaMemoryError):
    """The database cannot be reached or is not usable."""


class DatabaseUnavailable(DatabaseError):
    """No connection could be made to the configured PostgreSQL server."""


class DatabaseRefused(DatabaseError):
    """The database aborted or refused an operation: it had no effect, whatever it was.

    Raised only where that is certain — the statement never reached the server (no
    connection could be had), or the server answered it with an error, which rolls the
    transaction back (``statement_timeout``, ``lock_timeout``, a conflict, …). A caller
    may retry. ``reason`` is one of ``timeout`` (statement_timeout), ``lock``
    (lock_timeout), ``unavailable`` (no connection), ``conflict`` (serialization failure
    or deadlock), ``resources`` (out of connections, memory or disk), ``read_only`` (a
    standby) or ``refused`` (any other error of the statement); ``sqlstate`` is the
    server's code when it sent one.
    """

    def __init__(self, message: str, *, reason: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.sqlstate = sqlstate


class OutcomeUnknown(DatabaseError):
    """A write was sent but no answer came back: it may or may not have been committed.

    The connection broke after the statement went out, or the client stopped waiting
    (its timeout is longer than the server's ``statement_timeout``, so this means the
    server itself stalled). Whoever retries must first look whether it took effect.
    """


class PgvectorMissing(DatabaseError):
    """The server lacks the pgvector extension, or has a version that is too old."""


class EmbeddedServerError(DatabaseError):
    """The embedded PostgreSQL server could not be initialised or started."""


class SchemaNotReady(DatabaseError):
    """The database schema is not at the revision this code expects."""


class EmbeddingError(AmritaMemoryError):
    """An embedding provider failed; nothing was written."""


class BackendError(AmritaMemoryError):
    """A vector backend (pgvector or chroma) failed."""


class FingerprintMismatch(AmritaMemoryError):
    """The store's vectors come from another embedding model (or dimension) than the caller's."""


class FingerprintRefused(AmritaMemoryError):
    """``ask`` without a terminal: the plugin does not start on mismatched vectors."""


class PartitionFull(AmritaMemoryError):
    """The partition already holds ``per_session_memory_limit`` memories."""

    def __init__(self, partition_key: str, limit: int) -> None:
        super().__init__(f"partition {partition_key} is at its limit of {limit} memories")
        self.partition_key = partition_key
        self.limit = limit


class ProtectedMemory(AmritaMemoryError):
    """An automatic process tried to change or delete a memory a person added (source=user).

    Raised from SQLSTATE AMP01 (``update_memory_v3`` / ``delete_memory_v1``); a person
    changes such a memory with ``/memory`` or the ``amrita-memory`` CLI.
    """

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"memory {memory_id} was added by a person (source=user) and is protected")
        self.memory_id = memory_id


class MemoryPaused(AmritaMemoryError):
    """The memory of a partition is paused: kept, but not injected, not
    recalled and not written by automatic processes (the chat LLM, extraction, L3)."""

    def __init__(self, partition_key: str) -> None:
        super().__init__(f"the memory of {partition_key} is paused")
        self.partition_key = partition_key


class MemoTooLong(AmritaMemoryError):
    """A memo write was refused because the result would exceed ``memo_max_chars``.

    ``str(exc)`` is the reference's message («备忘录长度 {len} 超过上限 {max}，请压缩后重试»),
    which the tools hand to the LLM so it can compress and retry; the old memo is intact.
    """

    def __init__(self, length: int, limit: int, current_chars: int) -> None:
        super().__init__(f"备忘录长度 {length} 超过上限 {limit}，请压缩后重试")
        self.length = length
        self.limit = limit
        self.current_chars = current_chars


class ProfileRefused(AmritaMemoryError):
    """A profile edit or revert was refused (a range outside the profile, a limit, text the
    database cannot store, a version no longer in the history); nothing was written.

    ``str(exc)`` says what is wrong and what is allowed, for the LLM or the operator.
    """


class BackupError(AmritaMemoryError):
    """A backup could not be made or restored; the store is unchanged."""


class LlmError(AmritaMemoryError):
    """The chat-completions endpoint failed or answered something unusable.

    ``status`` is the HTTP status (None for transport and protocol errors), ``attempts``
    how many requests were made (0 when the failure was not an HTTP one).
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


class NotReady(AmritaMemoryError):
    """The memory is not open (start-up failed or has not run yet)."""


class ToolError(AmritaMemoryError):
    """A refusal the LLM can act on; its text becomes the error envelope's message."""

    def __init__(self, message: str, **extra: object) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


class KnowledgeError(AmritaMemoryError):
    """A knowledge-base operation was refused; nothing was written. ``str(exc)`` is the
    sentence for the LLM or the operator (the reference's wording where it had one)."""


class KnowledgeNotFound(KnowledgeError):
    def __init__(self, kid: str) -> None:
        super().__init__(f"Knowledge not found: {kid}")
        self.kid = kid


class KnowledgeTooLong(KnowledgeError):
    """The body would exceed ``knowledge_max_chars`` (checked by the write itself, B8)."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"Body exceeds max_chars ({length} > {limit})")
        self.length = length
        self.limit = limit


class KnowledgeRangeError(KnowledgeError):
    """A line window outside the entry's lines."""

    def __init__(self, message: str, total_lines: int) -> None:
        super().__init__(message)
        self.total_lines = total_lines


class SuggestionRefused(KnowledgeError):
    """A knowledge suggestion was not queued (queue full, rate limit, unknown kid)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class JobRefused(AmritaMemoryError):
    """A background job was not started (one of its kind is running, or the kind is
    unknown); nothing ran."""


class LeaseHeld(AmritaMemoryError):
    """Another process of the fleet holds the lease of this work: it is being
    done there; try again at the next window. ``owner`` is ``host:pid:start``."""

    def __init__(self, kind: str, key: str, owner: str, expires_at: datetime) -> None:
        what = f"{kind} {key}" if key else kind
        super().__init__(
            f"{what} is held by {owner} (its lease runs until {expires_at.isoformat()} "
            "unless renewed)"
        )
        self.kind = kind
        self.key = key
        self.owner = owner
        self.expires_at = expires_at
