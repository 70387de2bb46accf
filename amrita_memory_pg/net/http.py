"""JSON over HTTP for every remote service we call: embedding providers and the chat model.

One :class:`HttpClient` per service keeps connections alive. A request is attempted at
most ``1 + max_retries`` times (tenacity drives the loop): connection errors, timeouts,
HTTP 429 and 5xx are transient (a model still loading, a proxy restarting, a rate
limit) and are retried after an exponential backoff, ``backoff · 2^(n-1)`` seconds
before retry n, raised to the server's ``Retry-After`` and capped at
``max_backoff_seconds`` so that a caller never stalls for long; any other 4xx is a
mistake in the request (wrong model, bad key) that no retry can fix, so it fails at once.

Every failure is one :class:`HttpError` whose message names the service, the method
and URL, the HTTP status or the transport error, and the number of attempts, so that
an operator reading one log line knows what to fix. The layers above map it to their
own error (``raise EmbeddingHTTPError(...) from exc``). Every text this module produces
— messages, URLs, response bodies, retry log lines, and the text of the httpx
exceptions it chains — goes through :func:`amrita_memory_pg.domain.redact.redact` with
the client's secrets (the configured keys and the credentials of its auth headers).
"""

from __future__ import annotations

import base64
import json
import logging
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.domain.redact import redact

__all__ = [
    "BODY_EXCERPT_CHARS",
    "MAX_BACKOFF_SECONDS",
    "FailureKind",
    "HttpClient",
    "HttpError",
    "excerpt",
    "json_error_message",
    "retry_after_seconds",
]

log = logging.getLogger(__name__)

#: Characters of a response body quoted in an error message.
BODY_EXCERPT_CHARS = 300
#: Default upper bound of one backoff sleep, whatever Retry-After says.
MAX_BACKOFF_SECONDS = 5.0
#: No cap on connections (found by the load run with faults). With httpx's default cap (100)
#: requests queue for a connection under a burst; when one's pool wait times out just as the
#: pool creates a connection for it, httpcore (1.0.9) leaves that connection in the pool for
#: good, in state CONNECTING, holding a slot. During a 15 s embedding outage under 400
#: simulated users (bench/load.py) every slot became such a ghost and every later request
#: failed with PoolTimeout until the process restarted
#: (tests/integration/test_embedding_outage_recovery.py). Without a cap no request waits
#: for a slot; concurrency is bounded by the callers (one request per tool call).
UNCAPPED = httpx.Limits(max_connections=None, max_keepalive_connections=20)
#: Header names whose values are credentials (their values join the client's secrets).
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key"})

#: What went wrong: an HTTP error status, a timeout, another transport error (refused,
#: reset, DNS), a URL that cannot be requested, another httpx error (undecodable body,
#: redirect loop), or a 2xx answer that is not JSON.
FailureKind = Literal["status", "timeout", "connect", "invalid_url", "request", "not_json"]


class HttpError(AmritaMemoryError):
    """A request failed after ``attempts`` tries; every text in it is already redacted.

    Neutral on purpose: embedding/ and llm/ map it to their own public error.
    ``status`` is None for transport errors; ``body`` is the (redacted) response body.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind,
        service: str,
        url: str,
        status: int | None,
        attempts: int,
        body: str = "",
    ) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.service = service
        self.url = url
        self.status = status
        self.attempts = attempts
        self.body = body


class _AttemptFailed(Exception):
    """One attempt failed; tenacity retries it when ``retryable``. Never leaves the module."""

    def __init__(
        self,
        kind: FailureKind,
        detail: str,
        *,
        retryable: bool,
        status: int | None = None,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind: FailureKind = kind
        self.detail = detail
        self.retryable = retryable
        self.status = status
        self.body = body
        self.retry_after = retry_after


def excerpt(text: str) -> str:
    """``text`` on one line, cut to :data:`BODY_EXCERPT_CHARS` (for error messages)."""
    flat = " ".join(text.split())
    if len(flat) > BODY_EXCERPT_CHARS:
        return flat[:BODY_EXCERPT_CHARS] + "…"
    return flat or "<empty body>"


def json_error_message(body: str) -> str | None:
    """The ``error`` member of a JSON object body, if the body is one (Ollama, OpenAI)."""
    try:
        decoded = json.loads(body)
    except ValueError:
        return None
    if isinstance(decoded, dict) and decoded.get("error"):
        return str(decoded["error"])
    return None


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), else None."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    return seconds if seconds >= 0 and math.isfinite(seconds) else None


def _attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def _auth_secrets(headers: Mapping[str, str]) -> list[str]:
    """The credentials inside auth headers: the whole value and the token after the scheme."""
    found: list[str] = []
    for name, value in headers.items():
        if name.lower() in _AUTH_HEADERS and value:
            found.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() in ("bearer", "basic", "token"):
                found.append(token.strip())
    return found


def _url_secrets(url: str) -> list[str]:
    """The password of ``scheme://user:pw@host`` and the Basic token httpx builds from it."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return []
    if not parsed.password:
        return []
    basic = base64.b64encode(f"{parsed.username}:{parsed.password}".encode()).decode("ascii")
    return [parsed.password, basic]


class _RedactingFilter(logging.Filter):
    """httpx logs every request URL at INFO, credentials included: redact those lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        record.msg, record.args = redact(message), None
        return True


def _install_httpx_log_filter() -> None:
    logger = logging.getLogger("httpx")
    if not any(isinstance(f, _RedactingFilter) for f in logger.filters):
        logger.addFilter(_RedactingFilter())


_install_httpx_log_filter()


class HttpClient:
    """JSON requests to one service with a timeout, bounded retries and redacted errors.

    ``service`` names the caller in messages (``ollama-embed / bge-m3``, ``llm / gpt-4o``);
    a request may pass its own ``label`` when the name changes over the client's life.
    """

    def __init__(
        self,
        *,
        service: str,
        timeout_seconds: float,
        max_retries: int,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str | None] = (),
        backoff_seconds: float = 0.25,
        max_backoff_seconds: float = MAX_BACKOFF_SECONDS,
    ) -> None:
        self.service = service
        self.timeout_seconds = timeout_seconds
        self.max_retries = max(0, max_retries)
        self.backoff_seconds = max(0.0, backoff_seconds)
        self.max_backoff_seconds = max(0.0, max_backoff_seconds)
        header_map = dict(headers or {})
        self._secrets = [s for s in [*secrets, *_auth_secrets(header_map)] if s]
        self._backoff = wait_exponential(
            multiplier=self.backoff_seconds, max=self.max_backoff_seconds
        )
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_seconds), headers=header_map, limits=UNCAPPED
        )

    @property
    def attempts(self) -> int:
        """How many times one request is tried at most."""
        return 1 + self.max_retries

    def redact(self, text: str) -> str:
        """``text`` without this client's secrets or any credential shape."""
        return redact(text, secrets=self._secrets)

    def where(self, method: str, url: str, *, label: str | None = None) -> str:
        """``service: METHOD url``, redacted: how every message of a request starts."""
        return self.redact(f"{label or self.service}: {method} {url}")

    async def request_json(
        self, method: str, url: str, *, payload: Any = None, label: str | None = None
    ) -> Any:
        """The decoded JSON body of a 2xx answer; :class:`HttpError` after the attempts."""
        self._secrets.extend(s for s in _url_secrets(url) if s not in self._secrets)
        where = self.where(method, url, label=label)
        tried = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda e: isinstance(e, _AttemptFailed) and e.retryable),
            before_sleep=lambda state: self._log_retry(where, state),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    tried += 1
                    return await self._send(method, url, payload)
        except _AttemptFailed as failure:
            raise self._error(where, url, label, failure, tried) from failure.__cause__
        raise AssertionError("unreachable: tenacity either returns, retries or re-raises")

    async def _send(self, method: str, url: str, payload: Any) -> Any:
        """One attempt: the decoded body, or :class:`_AttemptFailed` saying whether to retry."""
        try:
            response = await self._client.request(method, url, json=payload)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            # A configuration mistake (no scheme, bad port): no retry can fix it.
            raise _AttemptFailed(
                "invalid_url",
                f"invalid URL ({self._exception_text(exc)}); it must look like http://host:port",
                retryable=False,
            ) from self._scrubbed(exc)
        except httpx.TimeoutException as exc:
            raise _AttemptFailed(
                "timeout",
                f"timed out ({type(exc).__name__}, timeout {self.timeout_seconds:g} s)",
                retryable=True,
            ) from self._scrubbed(exc)
        except httpx.TransportError as exc:
            raise _AttemptFailed(
                "connect",
                f"connection error ({type(exc).__name__}: {self._exception_text(exc)})",
                retryable=True,
            ) from self._scrubbed(exc)
        except httpx.HTTPError as exc:
            # Not a transport failure (a body that cannot be decoded, a redirect loop):
            # the same request would fail the same way.
            raise _AttemptFailed(
                "request",
                f"request error ({type(exc).__name__}: {self._exception_text(exc)})",
                retryable=False,
            ) from self._scrubbed(exc)
        status = response.status_code
        if status >= 400:
            raise _AttemptFailed(
                "status",
                f"HTTP {status}",
                retryable=status == 429 or status >= 500,
                status=status,
                body=self.redact(response.text),
                retry_after=retry_after_seconds(response.headers.get("retry-after")),
            )
        try:
            return response.json()
        except ValueError as exc:
            raise _AttemptFailed(
                "not_json",
                f"HTTP {status} with a body that is not JSON: {excerpt(self.redact(response.text))}",
                retryable=False,
                status=status,
                body=self.redact(response.text),
            ) from exc

    def _error(
        self, where: str, url: str, label: str | None, failure: _AttemptFailed, tried: int
    ) -> HttpError:
        if failure.kind == "status":
            message = (
                f"{where} failed with HTTP {failure.status} after {_attempts(tried)}: "
                f"{excerpt(failure.body)}"
            )
        else:
            message = f"{where} failed after {_attempts(tried)}: {failure.detail}"
        return HttpError(
            self.redact(message),
            kind=failure.kind,
            service=self.redact(label or self.service),
            url=self.redact(url),
            status=failure.status,
            attempts=tried,
            body=failure.body,
        )

    def _wait(self, state: RetryCallState) -> float:
        """Exponential backoff, raised to Retry-After, capped at ``max_backoff_seconds``."""
        delay = self._backoff(state)
        failure = state.outcome.exception() if state.outcome is not None else None
        if isinstance(failure, _AttemptFailed) and failure.retry_after is not None:
            delay = max(delay, failure.retry_after)
        return min(delay, self.max_backoff_seconds)

    def _log_retry(self, where: str, state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome is not None else None
        detail = failure.detail if isinstance(failure, _AttemptFailed) else "failed"
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "%s: %s on attempt %d of %d; retrying in %.2f s",
            where,
            detail,
            state.attempt_number,
            self.attempts,
            delay,
        )

    def _exception_text(self, exc: BaseException) -> str:
        return self.redact(str(exc)) or type(exc).__name__

    def _scrubbed(self, exc: BaseException) -> BaseException:
        """``exc`` (and what it wraps) with redacted string args: it is chained, and printed."""
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            current.args = tuple(self.redact(a) if isinstance(a, str) else a for a in current.args)
            current = current.__cause__ or current.__context__
        return exc

    async def aclose(self) -> None:
        await self._client.aclose()
