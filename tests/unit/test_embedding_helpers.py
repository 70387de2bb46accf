"""Pure pieces of the providers: URL rules, model picking, decoding, redaction, factory."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.domain.redact import redact_url
from amrita_memory_pg.embedding.factory import create_embedder, create_provider
from amrita_memory_pg.embedding.hashing import HashingProvider
from amrita_memory_pg.embedding.http import JsonHttpClient, json_error_message
from amrita_memory_pg.embedding.local import LocalProvider
from amrita_memory_pg.embedding.ollama import (
    OllamaProvider,
    embed_url,
    pick_embedding_model,
    server_root,
)
from amrita_memory_pg.embedding.openai_compat import (
    OpenAIProvider,
    decode_embedding,
    embeddings_url,
)
from amrita_memory_pg.settings import EmbeddingSettings


@pytest.mark.parametrize(
    ("base", "embed", "root"),
    [
        ("http://h:11434", "http://h:11434/api/embed", "http://h:11434"),
        ("http://h:11434/", "http://h:11434/api/embed", "http://h:11434"),
        ("http://h:11434/api/embed", "http://h:11434/api/embed", "http://h:11434"),
        ("https://proxy/ollama/", "https://proxy/ollama/api/embed", "https://proxy/ollama"),
    ],
)
def test_ollama_url_rules(base: str, embed: str, root: str) -> None:
    assert embed_url(base) == embed
    assert server_root(base) == root


def test_openai_url_appends_embeddings_to_the_base() -> None:
    assert embeddings_url("https://api.openai.com/v1") == "https://api.openai.com/v1/embeddings"
    assert embeddings_url("https://api.openai.com/v1/") == "https://api.openai.com/v1/embeddings"


@pytest.mark.parametrize(
    ("names", "picked"),
    [
        (["llama3:8b", "nomic-embed-text:latest", "mxbai-embed-large"], "nomic-embed-text:latest"),
        (["qwen2.5", "bge-m3:latest", "snowflake-arctic-embed"], "snowflake-arctic-embed"),
        (["qwen2.5", "bge-m3:latest"], "bge-m3:latest"),
        (["qwen2.5", "llama3"], None),
        ([], None),
    ],
)
def test_auto_prefers_names_with_embed_then_known_families(
    names: list[str], picked: str | None
) -> None:
    assert pick_embedding_model(names) == picked


def test_base64_embeddings_decode_as_little_endian_float32() -> None:
    values = np.array([0.25, -1.5, 3.0], dtype="<f4")
    encoded = base64.b64encode(values.tobytes()).decode()

    assert decode_embedding(encoded) == [0.25, -1.5, 3.0]
    assert decode_embedding([0.1, 0.2]) == [0.1, 0.2]
    assert decode_embedding("not base64!") is None
    assert decode_embedding(base64.b64encode(b"abc").decode()) is None  # not 4-byte aligned
    assert decode_embedding({"x": 1}) is None


def test_json_error_message_reads_only_a_json_error_member() -> None:
    assert json_error_message('{"error": "model \'x\' not found"}') == "model 'x' not found"
    assert json_error_message("404 page not found") is None
    assert json_error_message('{"data": []}') is None


def test_credentials_in_urls_are_redacted() -> None:
    assert redact_url("https://user:pw@host:1/v1") == "https://***@host:1/v1"
    assert redact_url("http://127.0.0.1:11434/api/embed") == "http://127.0.0.1:11434/api/embed"


async def test_secrets_are_scrubbed_from_text() -> None:
    client = JsonHttpClient(timeout_seconds=1, max_retries=0, secrets=["sk-1", ""])
    try:
        assert client.redact("bad key sk-1 (sk-1)") == "bad key *** (***)"
        assert client.redact("nothing here") == "nothing here"
    finally:
        await client.aclose()


def _settings(**values: object) -> EmbeddingSettings:
    return EmbeddingSettings(**values)


async def test_the_factory_builds_each_protocol_from_settings() -> None:
    hashing = create_provider(_settings(protocol="hash", hash_dim=16))
    local = create_provider(_settings(protocol="local", model_name="use-multilingual-v3"))
    ollama = create_provider(
        _settings(protocol="ollama-embed", model_url="http://h:1/", model_name="bge-m3")
    )
    openai = create_provider(
        _settings(
            protocol="openai",
            model_url="https://api.example/v1",
            model_name="text-embedding-3-small",
            api_key="sk-x",
            timeout_seconds=5,
            max_retries=4,
        )
    )
    try:
        assert isinstance(hashing, HashingProvider)
        assert hashing.dim == 16
        assert isinstance(local, LocalProvider)
        assert (local.model, local.base_url) == ("use-multilingual-v3", "")
        assert isinstance(ollama, OllamaProvider)
        assert (ollama.model, ollama.base_url) == ("bge-m3", "http://h:1/")
        assert isinstance(openai, OpenAIProvider)
        assert (openai.model, openai.base_url) == (
            "text-embedding-3-small",
            "https://api.example/v1",
        )
        assert openai._http.timeout_seconds == 5
        assert openai._http.max_retries == 4
    finally:
        await ollama.aclose()
        await openai.aclose()


def test_the_factory_refuses_openai_with_auto() -> None:
    with pytest.raises(ConfigError, match="EMBEDDING_MODEL_NAME"):
        create_provider(_settings(protocol="openai", model_name="auto"))


def test_create_embedder_applies_batch_and_cache_sizes() -> None:
    embedder = create_embedder(_settings(protocol="hash", batch_size=7, query_cache_size=3))

    assert (embedder.batch_size, embedder.cache_size) == (7, 3)
