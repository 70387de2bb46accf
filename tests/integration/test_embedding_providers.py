"""The HTTP providers against a real loopback server (:class:`StubEmbeddingServer`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import numpy as np
import pytest

from amrita_memory_pg.domain.errors import ConfigError, EmbeddingError
from amrita_memory_pg.domain.fingerprint import fingerprint
from amrita_memory_pg.embedding.base import Embedder, EmbeddingProvider
from amrita_memory_pg.embedding.http import EmbeddingHTTPError
from amrita_memory_pg.embedding.ollama import OllamaProvider
from amrita_memory_pg.embedding.openai_compat import OpenAIProvider
from amrita_memory_pg.testing import StubEmbeddingServer

KEY = "sk-test-0123456789abcdef"
TEXTS = [f"memory number {i}: 用户喜欢第{i}道菜" for i in range(7)]


@pytest.fixture
def server() -> Iterator[StubEmbeddingServer]:
    with StubEmbeddingServer(dim=64) as stub:
        yield stub


@pytest.fixture
async def closing() -> AsyncIterator[Callable[[Any], Any]]:
    """Register providers to ``aclose()`` after the test."""
    opened: list[EmbeddingProvider] = []

    def register(provider: Any) -> Any:
        opened.append(provider)
        return provider

    yield register
    for provider in opened:
        await provider.aclose()


@pytest.fixture
def ollama(
    server: StubEmbeddingServer, closing: Callable[[Any], Any]
) -> Callable[..., OllamaProvider]:
    def make(model: str = "bge-m3", url: str | None = None, **kw: Any) -> OllamaProvider:
        kw.setdefault("backoff_seconds", 0.01)
        provider: OllamaProvider = closing(OllamaProvider(url or server.url, model, **kw))
        return provider

    return make


@pytest.fixture
def openai(
    server: StubEmbeddingServer, closing: Callable[[Any], Any]
) -> Callable[..., OpenAIProvider]:
    def make(
        api_key: str = KEY, model: str = "text-embedding-3-small", **kw: Any
    ) -> OpenAIProvider:
        kw.setdefault("backoff_seconds", 0.01)
        provider: OpenAIProvider = closing(OpenAIProvider(server.openai_url, model, api_key, **kw))
        return provider

    return make


def assert_vectors(server: StubEmbeddingServer, texts: list[str], got: list[Any]) -> None:
    assert len(got) == len(texts)
    for text, vector in zip(texts, got, strict=True):
        np.testing.assert_allclose(np.asarray(vector), server.vector(text), rtol=0, atol=1e-6)


# ----- Ollama ---------------------------------------------------------------------------


async def test_ollama_returns_the_server_vectors_in_order_one_request_per_batch(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    embedder = Embedder(ollama(), batch_size=3)

    vectors = await embedder.embed_passages(TEXTS)

    assert_vectors(server, TEXTS, vectors)
    calls = server.embedding_requests
    assert [len(c.texts) for c in calls] == [3, 3, 1]
    assert [t for c in calls for t in c.texts] == TEXTS
    assert {c.path for c in calls} == {"/api/embed"}
    assert all(c.body["model"] == "bge-m3" for c in calls)
    assert all("authorization" not in c.headers for c in calls)


@pytest.mark.parametrize("suffix", ["", "/", "/api/embed"])
async def test_ollama_url_rule_appends_api_embed_unless_already_there(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider], suffix: str
) -> None:
    provider = ollama(url=server.url + suffix)

    await provider.embed(["x"], "passage")

    assert [r.path for r in server.requests] == ["/api/embed"]
    assert provider.base_url == server.url + suffix  # fingerprinted raw, as the reference


async def test_ollama_falls_back_to_api_embeddings_on_old_servers_and_remembers_it(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.old_ollama = True
    provider = ollama()

    first = await provider.embed(TEXTS[:3], "passage")
    second = await provider.embed(TEXTS[3:5], "query")

    assert_vectors(server, TEXTS[:5], [*first, *second])
    assert provider.uses_legacy_endpoint
    paths = [r.path for r in server.requests]
    assert paths == ["/api/embed"] + ["/api/embeddings"] * 5
    assert server.embedding_requests[0].body == {
        "model": "bge-m3",
        "prompt": TEXTS[0],
    }


async def test_ollama_auto_resolves_once_to_the_first_embedding_model_listed(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.models = ["llama3:8b", "mxbai-embed-large:latest", "nomic-embed-text:latest"]
    provider = ollama(model="auto")

    await asyncio.gather(*(provider.embed([t], "passage") for t in TEXTS[:4]))
    await provider.embed(["again"], "query")

    assert provider.resolved_model == "mxbai-embed-large:latest"
    assert {r.body["model"] for r in server.embedding_requests} == {"mxbai-embed-large:latest"}
    assert [r.path for r in server.requests].count("/api/tags") == 1
    # The fingerprint keeps the configured strings, exactly the reference's formula.
    assert provider.model == "auto"
    assert provider.fingerprint == fingerprint("ollama-embed", "auto", server.url)


async def test_ollama_auto_accepts_a_known_embedding_family_without_embed_in_its_name(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.models = ["qwen2.5:7b", "bge-m3:latest"]
    provider = ollama(model="auto")

    await provider.prepare()

    assert provider.resolved_model == "bge-m3:latest"


async def test_ollama_auto_without_an_embedding_model_says_to_set_the_model_name(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.models = ["llama3:8b", "qwen2.5:7b"]

    with pytest.raises(EmbeddingError) as info:
        await ollama(model="auto").embed(["x"], "passage")

    message = str(info.value)
    assert "EMBEDDING_MODEL_NAME" in message
    assert "llama3:8b" in message
    assert server.embedding_requests == []


async def test_ollama_error_key_in_a_200_answer_is_an_error(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.ollama_error = "model is still loading"

    with pytest.raises(EmbeddingError, match="Ollama error: model is still loading"):
        await ollama().embed(["x"], "passage")


async def test_ollama_json_404_is_a_missing_model_not_an_old_server_and_is_not_retried(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.fail_always = 404
    provider = ollama(max_retries=3)

    with pytest.raises(EmbeddingHTTPError) as info:
        await provider.embed(["x"], "passage")

    assert info.value.status == 404
    assert info.value.attempts == 1
    assert not provider.uses_legacy_endpoint
    assert [r.path for r in server.requests] == ["/api/embed"]


async def test_ollama_persistent_500_names_provider_url_status_and_attempts(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.fail_always = 500

    with pytest.raises(EmbeddingError) as info:
        await ollama(max_retries=2).embed(["x"], "passage")

    message = str(info.value)
    assert message.startswith(f"ollama-embed / bge-m3: POST {server.url}/api/embed failed")
    assert "HTTP 500 after 3 attempts" in message
    assert "scripted HTTP 500" in message  # a short excerpt of the body
    assert len(server.embedding_requests) == 3


# ----- retries, timeouts, transport errors (shared client) ------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 429])
async def test_a_transient_failure_is_retried_and_then_succeeds(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider], status: int
) -> None:
    server.fail_on_batch = {1: status}

    vectors = await ollama(max_retries=2).embed(["x", "y"], "passage")

    assert_vectors(server, ["x", "y"], vectors)
    assert len(server.embedding_requests) == 2


async def test_retry_after_of_a_429_is_waited_for_before_the_retry(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.fail_on_batch = {1: 429}
    server.retry_after = "0.4"
    started = time.monotonic()

    vectors = await ollama(max_retries=1, backoff_seconds=0.01).embed(["x"], "passage")

    assert time.monotonic() - started >= 0.4  # the server's wait, not the 0.01 s backoff
    assert_vectors(server, ["x"], vectors)
    assert len(server.embedding_requests) == 2


async def test_each_retry_is_logged_without_the_api_key(
    server: StubEmbeddingServer,
    openai: Callable[..., OpenAIProvider],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    server.fail_always = 503
    provider = openai(api_key=KEY, max_retries=2)
    provider.model = f"bad-model-{KEY}"  # echoed in the stub's error body and in the label

    with pytest.raises(EmbeddingHTTPError) as info:
        await provider.embed(["x"], "passage")

    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2
    assert "HTTP 503 on attempt 1 of 3" in retries[0]
    assert info.value.attempts == 3
    assert all(KEY not in r.getMessage() for r in caplog.records)


async def test_fail_on_batch_counts_requests_so_the_kth_batch_fails_without_retries(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.fail_on_batch = {2: 500}
    embedder = Embedder(ollama(max_retries=0), batch_size=2)

    with pytest.raises(EmbeddingHTTPError) as info:
        await embedder.embed_passages(TEXTS)

    assert info.value.status == 500
    assert len(server.embedding_requests) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 422])
async def test_other_4xx_are_not_retried(
    server: StubEmbeddingServer, openai: Callable[..., OpenAIProvider], status: int
) -> None:
    server.fail_always = status

    with pytest.raises(EmbeddingHTTPError) as info:
        await openai(max_retries=4).embed(["x"], "passage")

    assert info.value.status == status
    assert f"HTTP {status} after 1 attempt:" in str(info.value)
    assert len(server.embedding_requests) == 1


async def test_a_slow_server_times_out_with_an_error_after_bounded_attempts(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    server.delay_seconds = 2.0
    started = time.monotonic()

    with pytest.raises(EmbeddingHTTPError) as info:
        await ollama(timeout_seconds=0.2, max_retries=1).embed(["x"], "passage")

    assert time.monotonic() - started < 1.5
    message = str(info.value)
    assert "timed out" in message
    assert "after 2 attempts" in message
    assert f"{server.url}/api/embed" in message
    assert info.value.status is None


async def test_a_refused_connection_names_the_connection_error(
    ollama: Callable[..., OllamaProvider],
) -> None:
    with StubEmbeddingServer() as gone:
        url = gone.url  # a port that was free a moment ago and is closed now

    with pytest.raises(EmbeddingHTTPError) as info:
        await ollama(url=url, max_retries=1).embed(["x"], "passage")

    message = str(info.value)
    assert "connection error (ConnectError" in message
    assert f"POST {url}/api/embed failed after 2 attempts" in message


# ----- OpenAI-compatible ----------------------------------------------------------------


async def test_openai_sends_bearer_key_and_orders_shuffled_data_by_index(
    server: StubEmbeddingServer, openai: Callable[..., OpenAIProvider]
) -> None:
    server.require_api_key = KEY
    server.shuffle_index = True

    vectors = await openai().embed(TEXTS, "passage")

    assert_vectors(server, TEXTS, vectors)
    (call,) = server.embedding_requests
    assert call.path == "/v1/embeddings"
    assert call.headers["authorization"] == f"Bearer {KEY}"
    assert call.body == {
        "input": TEXTS,
        "model": "text-embedding-3-small",
        "encoding_format": "float",
    }


async def test_openai_url_strips_a_trailing_slash_of_the_base(
    server: StubEmbeddingServer, closing: Callable[[Any], Any]
) -> None:
    provider = closing(OpenAIProvider(server.openai_url + "/", "m", ""))

    await provider.embed(["x"], "query")

    assert [r.path for r in server.requests] == ["/v1/embeddings"]
    assert all("authorization" not in r.headers for r in server.requests)


async def test_openai_decodes_base64_float32_embeddings(
    server: StubEmbeddingServer, openai: Callable[..., OpenAIProvider]
) -> None:
    server.base64_vectors = True

    vectors = await openai().embed(TEXTS[:3], "passage")

    assert_vectors(server, TEXTS[:3], vectors)


async def test_openai_without_the_key_gets_401_once(
    server: StubEmbeddingServer, openai: Callable[..., OpenAIProvider]
) -> None:
    server.require_api_key = KEY

    with pytest.raises(EmbeddingHTTPError) as info:
        await openai(api_key="", max_retries=3).embed(["x"], "passage")

    assert info.value.status == 401
    assert "openai / text-embedding-3-small: POST" in str(info.value)
    assert "HTTP 401 after 1 attempt" in str(info.value)
    assert len(server.requests) == 1


def test_openai_refuses_auto_as_a_model_name() -> None:
    with pytest.raises(ConfigError, match="EMBEDDING_MODEL_NAME"):
        OpenAIProvider("http://127.0.0.1:1/v1", "auto", KEY)


async def test_the_api_key_appears_in_no_error_message(
    server: StubEmbeddingServer, openai: Callable[..., OpenAIProvider]
) -> None:
    scenarios: list[dict[str, Any]] = [
        {"require_api_key": "sk-a-different-key"},  # 401
        {"require_api_key": KEY, "fail_always": 500},
        {"require_api_key": KEY, "delay_seconds": 1.0},  # timeout
    ]
    messages: list[str] = []
    for scenario in scenarios:
        server.fail_always, server.delay_seconds = None, 0.0
        for name, value in scenario.items():
            setattr(server, name, value)
        with pytest.raises(EmbeddingHTTPError) as info:
            await openai(timeout_seconds=0.2, max_retries=1).embed(["x"], "passage")
        messages += [str(info.value), repr(info.value), info.value.body]

    assert "HTTP 401" in messages[0]
    assert "HTTP 500" in messages[3]
    assert "timed out" in messages[6]
    assert all(KEY not in m for m in messages)


async def test_the_api_key_is_scrubbed_even_when_the_server_echoes_it(
    server: StubEmbeddingServer, openai: Callable[..., OpenAIProvider]
) -> None:
    server.fail_always = 400
    provider = openai(api_key=KEY)
    # Servers quote the model name they refuse; a name that contains the key makes the
    # stub echo it back in the body.
    provider.model = f"bad-model-{KEY}"

    with pytest.raises(EmbeddingHTTPError) as info:
        await provider.embed(["x"], "passage")

    assert KEY not in str(info.value)
    assert "***" in str(info.value)


# ----- a model change as another engineer will simulate it ------------------------------


async def test_a_dimension_change_on_the_server_is_refused_by_the_embedder(
    server: StubEmbeddingServer, ollama: Callable[..., OllamaProvider]
) -> None:
    embedder = Embedder(ollama(), batch_size=8)
    (before,) = await embedder.embed_passages(["x"])
    server.dim = 1024

    with pytest.raises(EmbeddingError, match="dimension 1024, expected 64"):
        await embedder.embed_passages(["y"])

    assert before.shape == (64,)


@pytest.mark.parametrize("url", ["127.0.0.1:11434", "http://127.0.0.1:notaport"])
async def test_a_url_without_scheme_or_with_a_bad_port_fails_at_once(
    ollama: Callable[..., OllamaProvider], url: str
) -> None:
    started = time.monotonic()

    with pytest.raises(EmbeddingHTTPError, match="invalid URL") as info:
        await ollama(url=url, max_retries=3, backoff_seconds=1.0, model="bge-m3").embed(
            ["x"], "passage"
        )

    assert info.value.attempts == 1
    assert time.monotonic() - started < 0.5
