"""The embedding providers' view of the shared HTTP floor (:mod:`amrita_memory_pg.net.http`).

Retries, backoff, timeouts and redaction live in :class:`~amrita_memory_pg.net.http.HttpClient`;
this module only turns its neutral :class:`~amrita_memory_pg.net.http.HttpError` into
:class:`EmbeddingHTTPError`, the public error of the embedding layer, so that a failed
embedding call is an :class:`~amrita_memory_pg.domain.errors.EmbeddingError` like any other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from amrita_memory_pg.domain.errors import EmbeddingError
from amrita_memory_pg.net.http import (
    BODY_EXCERPT_CHARS,
    MAX_BACKOFF_SECONDS,
    HttpClient,
    HttpError,
    json_error_message,
)

__all__ = [
    "BODY_EXCERPT_CHARS",
    "MAX_BACKOFF_SECONDS",
    "EmbeddingHTTPError",
    "JsonHttpClient",
    "json_error_message",
]


class EmbeddingHTTPError(EmbeddingError):
    """An HTTP call of an embedding provider failed; ``status`` is None for transport errors."""

    def __init__(
        self, message: str, *, url: str, status: int | None, attempts: int, body: str = ""
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.attempts = attempts
        self.body = body


class JsonHttpClient(HttpClient):
    """:class:`HttpClient` whose failures are :class:`EmbeddingHTTPError`."""

    def __init__(
        self,
        *,
        timeout_seconds: float,
        max_retries: int,
        service: str = "embedding",
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str | None] = (),
        backoff_seconds: float = 0.25,
    ) -> None:
        super().__init__(
            service=service,
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
            headers=headers,
            secrets=secrets,
            backoff_seconds=backoff_seconds,
        )

    async def request_json(
        self, method: str, url: str, *, payload: Any = None, label: str | None = None
    ) -> Any:
        """The decoded JSON body of a 2xx answer; :class:`EmbeddingHTTPError` otherwise."""
        try:
            return await super().request_json(method, url, payload=payload, label=label)
        except HttpError as exc:
            raise EmbeddingHTTPError(
                str(exc), url=exc.url, status=exc.status, attempts=exc.attempts, body=exc.body
            ) from exc
