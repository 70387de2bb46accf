"""The shared HTTP client against a real loopback server: backoff bounds and its logs."""

from __future__ import annotations

import logging
import time

import pytest

from amrita_memory_pg.net.http import HttpClient, HttpError
from amrita_memory_pg.testing import StubEmbeddingServer


async def test_a_long_retry_after_is_capped_at_the_maximum_backoff() -> None:
    with StubEmbeddingServer(dim=8, fail_on_batch={1: 429}, retry_after="3600") as server:
        client = HttpClient(
            service="svc", timeout_seconds=5, max_retries=1, max_backoff_seconds=0.2
        )
        started = time.monotonic()
        try:
            body = await client.request_json(
                "POST", server.url + "/api/embed", payload={"model": "m", "input": ["x"]}
            )
        finally:
            await client.aclose()

    assert time.monotonic() - started < 2.0  # not an hour
    assert len(body["embeddings"]) == 1
    assert len(server.embedding_requests) == 2


async def test_the_error_carries_kind_status_attempts_and_the_redacted_url() -> None:
    with StubEmbeddingServer(dim=8, fail_always=502) as server:
        url = server.url.replace("http://", "http://ops:s3cr3t-pass@") + "/api/embed"
        shown = server.url.replace("http://", "http://***@") + "/api/embed"
        client = HttpClient(service="svc", timeout_seconds=5, max_retries=2, backoff_seconds=0)
        try:
            with pytest.raises(HttpError) as info:
                await client.request_json("POST", url, payload={"model": "m", "input": ["x"]})
        finally:
            await client.aclose()

    error = info.value
    assert (error.kind, error.status, error.attempts) == ("status", 502, 3)
    assert error.url == shown
    assert error.service == "svc"
    assert "scripted HTTP 502" in error.body
    assert "s3cr3t-pass" not in str(error)


async def test_httpx_request_log_lines_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="httpx")
    with StubEmbeddingServer(dim=8) as server:
        client = HttpClient(service="svc", timeout_seconds=5, max_retries=0)
        try:
            await client.request_json(
                "POST",
                server.url + "/api/embed?key=query-s3cret-123",
                payload={"model": "m", "input": ["x"]},
            )
        finally:
            await client.aclose()

    lines = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert any("/api/embed?key=***" in line for line in lines)
    assert all("query-s3cret-123" not in line for line in lines)
