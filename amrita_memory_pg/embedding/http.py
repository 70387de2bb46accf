"""The JSON-over-HTTP client shared by the remote providers (Ollama, OpenAI-compatible).

One :class:`httpx.AsyncClient` per provider keeps connections alive across batches. A
request is attempted at most ``1 + max_retries`` times: connection errors, timeouts,
HTTP 429 and 5xx are transient (a model still loading, a proxy restarting) and retried
after a short exponential backoff; any other 4xx is a mistake in the request (wrong
model, bad key) that a retry cannot fix, so it fails at once. Every failure becomes an
:class:`EmbeddingHTTPError` whose message names the provider, the URL, the HTTP status or
the connection error, and the number of attempts, so that an operator reading one log
line knows what to fix. Secrets (the API key) are scrubbed from every message.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from amrita_memory_pg.domain.errors import EmbeddingError

#: Characters of a response body quoted in an error message.
BODY_EXCERPT_CHARS = 300
#: Upper bound of one backoff sleep, so that retries stay "short" whatever Retry-After says.
MAX_BACKOFF_SECONDS = 5.0


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


#: issue 11 (feat/load): no cap on connections. With httpx's default cap (100) requests
#: queue for a connection under a burst; when one's pool wait times out just as the pool
#: creates a connection for it, httpcore (1.0.9) leaves that connection in the pool for
#: good, in state CONNECTING, holding a slot. During a 15 s embedding outage under 400
#: simulated users (bench/load.py) every slot became such a ghost and every later request
#: failed with PoolTimeout until the process restarted. Without a cap no request waits
#: for a slot; concurrency is bounded by the callers (one request per tool call).
UNCAPPED = httpx.Limits(max_connections=None, max_keepalive_connections=20)


def _retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) > BODY_EXCERPT_CHARS:
        return flat[:BODY_EXCERPT_CHARS] + "…"
    return flat or "<empty body>"


def redact_url(url: str) -> str:
    """``https://user:pw@host/x`` → ``https://***@host/x``: credentials never reach a log."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1***@", url)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


class JsonHttpClient:
    """POST/GET JSON with a timeout, bounded retries and provider-naming errors."""

    def __init__(
        self,
        *,
        timeout_seconds: float,
        max_retries: int,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str] = (),
        backoff_seconds: float = 0.25,
    ) -> None:
        self.timeout_seconds = timeout_seconds
        self.max_retries = max(0, max_retries)
        self.backoff_seconds = max(0.0, backoff_seconds)
        self._secrets = [s for s in secrets if s]
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_seconds),
            headers=dict(headers or {}),
            limits=UNCAPPED,
        )

    def scrub(self, text: str) -> str:
        """``text`` with every configured secret replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    async def request_json(self, method: str, url: str, *, label: str, payload: Any = None) -> Any:
        """The decoded JSON body of a 2xx answer; :class:`EmbeddingHTTPError` otherwise.

        ``label`` names the provider in messages (``ollama-embed / bge-m3``).
        """
        attempts = 1 + self.max_retries
        where = f"{label}: {method} {redact_url(url)}"
        for attempt in range(1, attempts + 1):
            last = attempt == attempts
            try:
                response = await self._client.request(method, url, json=payload)
            except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
                # A configuration mistake (no scheme, bad port): no retry can fix it.
                raise self._error(
                    f"{where} failed: invalid URL ({exc}); it must look like http://host:port",
                    url=url,
                    status=None,
                    attempts=attempt,
                ) from exc
            except httpx.TimeoutException as exc:
                if last:
                    raise self._error(
                        f"{where} failed after {_attempts(attempt)}: timed out "
                        f"({type(exc).__name__}, timeout {self.timeout_seconds:g} s)",
                        url=url,
                        status=None,
                        attempts=attempt,
                    ) from exc
                await self._sleep(attempt, None)
                continue
            except httpx.TransportError as exc:
                if last:
                    detail = str(exc) or type(exc).__name__
                    raise self._error(
                        f"{where} failed after {_attempts(attempt)}: "
                        f"connection error ({type(exc).__name__}: {detail})",
                        url=url,
                        status=None,
                        attempts=attempt,
                    ) from exc
                await self._sleep(attempt, None)
                continue
            status = response.status_code
            if status >= 400:
                if _retryable_status(status) and not last:
                    await self._sleep(attempt, _retry_after(response))
                    continue
                body = response.text
                raise self._error(
                    f"{where} failed with HTTP {status} after {_attempts(attempt)}: "
                    f"{_excerpt(body)}",
                    url=url,
                    status=status,
                    attempts=attempt,
                    body=body,
                )
            try:
                return response.json()
            except ValueError as exc:
                raise self._error(
                    f"{where} answered HTTP {status} with a body that is not JSON: "
                    f"{_excerpt(response.text)}",
                    url=url,
                    status=status,
                    attempts=attempt,
                ) from exc
        raise AssertionError("unreachable: the last attempt always returns or raises")

    def _error(
        self, message: str, *, url: str, status: int | None, attempts: int, body: str = ""
    ) -> EmbeddingHTTPError:
        return EmbeddingHTTPError(
            self.scrub(message),
            url=redact_url(url),
            status=status,
            attempts=attempts,
            body=self.scrub(body),
        )

    async def _sleep(self, attempt: int, retry_after: float | None) -> None:
        """Exponential backoff: base, 2×base, 4×base … capped; Retry-After raises it."""
        delay = self.backoff_seconds * (2 ** (attempt - 1))
        if retry_after is not None:
            delay = max(delay, retry_after)
        await asyncio.sleep(min(delay, MAX_BACKOFF_SECONDS))

    async def aclose(self) -> None:
        await self._client.aclose()


def _attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def json_error_message(body: str) -> str | None:
    """The ``error`` member of a JSON object body, if the body is one (Ollama, OpenAI)."""
    try:
        decoded = json.loads(body)
    except ValueError:
        return None
    if isinstance(decoded, dict) and decoded.get("error"):
        return str(decoded["error"])
    return None
