"""A minimal OpenAI-compatible ``/chat/completions`` client with tool calls (httpx).

Enough for the built-in responder: one request per round, the assistant message back.
Any OpenAI-compatible server works (OpenAI, DeepSeek, vLLM, Ollama's ``/v1``…).
HTTP and protocol failures become :class:`LlmError` with one sentence.
"""

from __future__ import annotations

from typing import Any

import httpx

from amrita_memory_pg.domain.errors import LlmError
from amrita_memory_pg.settings import LlmSettings

Message = dict[str, Any]


def completions_url(base_url: str) -> str:
    """``…/v1`` → ``…/v1/chat/completions``; a full completions URL is kept as is."""
    base = base_url.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


def is_configured(settings: LlmSettings) -> bool:
    """An endpoint and a model are set (the key is optional: local servers need none)."""
    return bool(settings.base_url and settings.model)


class ChatClient:
    def __init__(self, settings: LlmSettings, *, http: httpx.AsyncClient | None = None) -> None:
        self.settings = settings
        self._url = completions_url(settings.base_url)
        key = settings.api_key.get_secret_value()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = http or httpx.AsyncClient(timeout=settings.timeout_seconds, headers=headers)

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> Message:
        """The assistant message of one completion (``content`` and/or ``tool_calls``)."""
        body: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        try:
            response = await self._http.post(self._url, json=body)
            response.raise_for_status()
            data = response.json()
        except httpx.HTTPStatusError as exc:
            raise LlmError(
                f"LLM endpoint {self._url} answered HTTP {exc.response.status_code}: "
                f"{exc.response.text[:200]}"
            ) from exc
        except (httpx.HTTPError, ValueError) as exc:
            raise LlmError(f"LLM endpoint {self._url} failed: {exc}") from exc
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LlmError(f"LLM endpoint {self._url} returned no choices: {data!r:.200}") from exc
        if not isinstance(message, dict):
            raise LlmError(f"LLM endpoint {self._url} returned a malformed message")
        return message

    async def aclose(self) -> None:
        await self._http.aclose()
