"""The protocols the core needs from the outside: a vector backend, an embedder, a chat model.

Storage, embedding and llm implement them; the service and maintenance depend only on
these shapes, so a backend or a provider can be swapped (or a test double written)
without touching the layers above. ``pool`` arguments are the storage layer's asyncpg
pool, typed loosely here so that the domain imports no driver.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from amrita_memory_pg.domain.records import MemoryQuery, MemoryRecord, SearchHit
from amrita_memory_pg.domain.trail import Recalled, RecallLog

Vector = npt.NDArray[np.float32]
#: One OpenAI chat message (``role``, ``content``, ``tool_calls``, ``tool_call_id``…).
Message = dict[str, Any]


class ProviderInfo(Protocol):
    """What identifies an embedding model: the three parts of its fingerprint."""

    @property
    def protocol(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def base_url(self) -> str: ...


class Embedder(Protocol):
    """Texts → vectors, always called before any transaction or lock is taken."""

    #: the model's dimension, known after the first embedding (None before)
    dim: int | None

    @property
    def provider(self) -> ProviderInfo: ...

    @property
    def fingerprint(self) -> str: ...

    def describe(self) -> str: ...

    async def prepare(self) -> None: ...

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]: ...

    async def embed_query(self, text: str) -> Vector: ...

    def cached_query(self, text: str) -> Vector | None:
        """The query's vector when it is cached (no provider call), else None."""
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class RecallingBackend(Protocol):
    """A backend that searches in PostgreSQL can also check the pause and write the
    access log in the same statement (``recall_memories_v4``): one round trip per read."""

    async def recall(self, pool: Any, q: MemoryQuery, log: RecallLog) -> Recalled:
        """The hits of ``q``, or that its partition is paused; the hits logged per ``log``."""
        ...

    async def recall_unlogged(self, pool: Any, q: MemoryQuery) -> Recalled:
        """:meth:`recall` without the log, in one statement that writes nothing: on a
        read replica (a hot standby cannot write; the caller logs the hits on the primary)."""
        ...


class VectorBackend(Protocol):
    """Where similarity search runs; PostgreSQL always holds every memory with its vector."""

    name: str
    #: whether added/updated/removed do any work; without hooks a single-statement insert
    #: needs no explicit transaction (one round trip instead of three)
    write_hooks: bool

    async def search(self, pool: Any, q: MemoryQuery) -> list[SearchHit]:
        """The ``q.top_k`` of ``q.partition_key`` for the query (``q.vector``, and
        ``q.ranking.tokens``) by decay score (relevance alone when decay is off), ranked
        by ``q.ranking.mode``; ``q.vector`` is None only in keyword mode."""
        ...

    async def added(self, record: MemoryRecord, vector: Vector) -> None:
        """A memory was inserted (called inside the inserting transaction)."""
        ...

    async def updated(self, record: MemoryRecord, vector: Vector | None) -> None:
        """A memory's metadata (and, when ``vector`` is given, its vector) changed."""
        ...

    async def removed(self, ids: Sequence[str]) -> None:
        """Memories were deleted (or purged by the sweep)."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens one or more chat calls cost, as the endpoint reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        """The usage of two calls together (a tool loop sums its rounds)."""
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )


@dataclass(frozen=True, slots=True)
class ChatResult:
    """The assistant message of one completion (``content`` and/or ``tool_calls``) and its cost."""

    message: Message
    usage: TokenUsage
    #: the model the request named ("" = not known): what a host's preset was at the call
    model: str = ""


class ChatModel(Protocol):
    """An OpenAI-compatible chat model with tool calls."""

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> ChatResult:
        """One completion; raises the implementation's error (``LlmError``) on failure."""
        ...

    async def aclose(self) -> None: ...


#: Whether a user belongs to a group: (platform, user_id, group_id) → member or admin.
#: The adapter provides it (NoneBot asks the platform); the core's default is the chat
#: log (whoever spoke in the group), see ``services.bot_memories``. Used by
#: ``memory_load_context`` before loading a group's memories into another chat.
MembershipCheck = Callable[[str, str, str], Awaitable[bool]]
