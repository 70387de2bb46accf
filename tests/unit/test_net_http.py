"""Pure pieces of the shared HTTP floor: Retry-After parsing, excerpts, secrets from headers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from amrita_memory_pg.net.http import (
    BODY_EXCERPT_CHARS,
    HttpClient,
    excerpt,
    retry_after_seconds,
)

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("3", 3.0),
        (" 0.5 ", 0.5),
        ("0", 0.0),
        ("Sat, 01 Mar 2025 12:00:07 GMT", 7.0),  # an HTTP date 7 s after NOW
        ("Sat, 01 Mar 2025 11:59:00 GMT", 0.0),  # a date in the past: retry now
        ("-1", None),
        ("inf", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_reads_delta_seconds_and_http_dates(
    value: str | None, seconds: float | None
) -> None:
    assert retry_after_seconds(value, now=NOW) == seconds


def test_an_excerpt_is_one_line_and_bounded() -> None:
    assert excerpt("a\n  b\tc") == "a b c"
    assert excerpt("   ") == "<empty body>"
    long = excerpt("x" * (BODY_EXCERPT_CHARS + 50))
    assert long == "x" * BODY_EXCERPT_CHARS + "…"


async def test_credentials_of_auth_headers_and_configured_secrets_are_redacted() -> None:
    client = HttpClient(
        service="svc",
        timeout_seconds=1,
        max_retries=0,
        headers={"Authorization": "Bearer opaque-token-value", "X-Api-Key": "k3y-v4lue"},
        secrets=["configured-secret", None, ""],
    )
    try:
        text = client.redact(
            "token opaque-token-value, key k3y-v4lue, and configured-secret in one body"
        )
        assert "opaque-token-value" not in text
        assert "k3y-v4lue" not in text
        assert "configured-secret" not in text
        assert text.count("***") == 3
        assert client.where("POST", "http://u:pw@h:1/x?api_key=abc") == (
            "svc: POST http://***@h:1/x?api_key=***"
        )
    finally:
        await client.aclose()
