"""What the core needs from the outside; here: a chat model (llm/ implements it).

The responder and L3 depend only on :class:`ChatModel`, so a different client or a
test double can stand in without touching them. Every call reports what it cost
(:class:`TokenUsage`), because the ``token_usage`` table and budgets need it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

#: One OpenAI chat message (``role``, ``content``, ``tool_calls``, ``tool_call_id``…).
Message = dict[str, Any]


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


class ChatModel(Protocol):
    """An OpenAI-compatible chat model with tool calls."""

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> ChatResult:
        """One completion; raises the implementation's error (``LlmError``) on failure."""
        ...

    async def aclose(self) -> None: ...
