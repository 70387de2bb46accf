"""An OpenAI-compatible ``/chat/completions`` client with tool calls and token usage.

Enough for the built-in responder and L3: one request per round, the assistant message
and the round's token usage back (:class:`~amrita_memory_pg.domain.ports.ChatResult`).
Any OpenAI-compatible server works (OpenAI, DeepSeek, vLLM, Ollama's ``/v1``…). The
HTTP work — timeout, retries with backoff on connection errors, timeouts, 429 and 5xx,
redaction of the key and of URL credentials — is the shared
:class:`~amrita_memory_pg.net.http.HttpClient`; every failure, HTTP or protocol (no
choices, not JSON), becomes one :class:`LlmError` sentence without secrets.
"""

from __future__ import annotations

import json
from typing import Any

from amrita_memory_pg.domain.errors import LlmError
from amrita_memory_pg.domain.ports import ChatResult, Message, TokenUsage
from amrita_memory_pg.net.http import HttpClient, HttpError, excerpt
from amrita_memory_pg.settings import LlmSettings

__all__ = [
    "DEFAULT_BACKOFF_SECONDS",
    "DEFAULT_MAX_RETRIES",
    "ChatClient",
    "LlmError",
    "Message",
    "completions_url",
    "is_configured",
    "usage_from",
]

#: Retries after the first attempt, as the OpenAI SDK does by default.
DEFAULT_MAX_RETRIES = 2
#: First backoff sleep; doubles per retry (capped by the HTTP layer, raised by Retry-After).
DEFAULT_BACKOFF_SECONDS = 0.5


def completions_url(base_url: str) -> str:
    """``…/v1`` → ``…/v1/chat/completions``; a full completions URL is kept as is."""
    base = base_url.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


def is_configured(settings: LlmSettings) -> bool:
    """An endpoint and a model are set (the key is optional: local servers need none)."""
    return bool(settings.base_url and settings.model)


def _count(value: Any) -> int:
    """A token count as reported, or 0 for anything that is not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def usage_from(raw: Any) -> TokenUsage:
    """The OpenAI ``usage`` member as :class:`TokenUsage`; zeros when absent or malformed.

    ``total_tokens`` is the reported total, else prompt + completion.
    """
    if not isinstance(raw, dict):
        return TokenUsage()
    prompt = _count(raw.get("prompt_tokens"))
    completion = _count(raw.get("completion_tokens"))
    total = _count(raw.get("total_tokens")) or prompt + completion
    return TokenUsage(prompt, completion, total)


class ChatClient:
    """:class:`~amrita_memory_pg.domain.ports.ChatModel` over an OpenAI-compatible endpoint."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
    ) -> None:
        self.settings = settings
        self._url = completions_url(settings.base_url)
        api_key = settings.api_key.get_secret_value()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = HttpClient(
            service=f"llm / {settings.model}",
            timeout_seconds=settings.timeout_seconds,
            max_retries=max_retries,
            headers=headers,
            secrets=[api_key],
            backoff_seconds=backoff_seconds,
        )

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> ChatResult:
        """The assistant message of one completion and the tokens it cost."""
        body: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        try:
            data = await self._http.request_json("POST", self._url, payload=body)
        except HttpError as exc:
            raise LlmError(str(exc), status=exc.status, attempts=exc.attempts) from exc
        return ChatResult(
            message=self._message(data),
            usage=usage_from(_get(data, "usage")),
            model=self.settings.model,
        )

    def _message(self, data: Any) -> Message:
        """``choices[0].message`` of a completion; :class:`LlmError` naming what is wrong."""
        where = self._http.where("POST", self._url)
        choices = _get(data, "choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if isinstance(message, dict):
            return message
        error = _get(data, "error")
        if error:
            detail = f"an error: {excerpt(json.dumps(error, ensure_ascii=False))}"
        elif first is not None:
            detail = f"a malformed message: {excerpt(json.dumps(first, ensure_ascii=False))}"
        else:
            detail = f"no choices: {excerpt(json.dumps(data, ensure_ascii=False))}"
        raise LlmError(self._http.redact(f"{where} returned {detail}"))

    async def aclose(self) -> None:
        await self._http.aclose()


def _get(data: Any, key: str) -> Any:
    return data.get(key) if isinstance(data, dict) else None
