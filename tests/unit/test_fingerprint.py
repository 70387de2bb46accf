"""The fingerprint hashes the raw configured strings; its description never shows credentials."""

from __future__ import annotations

import hashlib

import pytest

from amrita_memory_pg.domain.fingerprint import describe, fingerprint


@pytest.mark.parametrize(
    ("url", "shown", "hidden"),
    [
        ("http://alice:hunter2-pw@ollama.lan:11434", "http://***@ollama.lan:11434", "hunter2-pw"),
        ("https://tok3n-only@proxy.example/v1", "https://***@proxy.example/v1", "tok3n-only"),
        (
            "https://gw.example/v1?key=AIzaSecretValue99&region=eu",
            "https://gw.example/v1?key=***&region=eu",
            "AIzaSecretValue99",
        ),
    ],
)
def test_describe_redacts_credentials_in_the_url(url: str, shown: str, hidden: str) -> None:
    text = describe("openai", "text-embedding-3-small", url)

    assert text == f"openai / text-embedding-3-small @ {shown}"
    assert hidden not in text


def test_describe_keeps_a_plain_url_and_marks_missing_parts() -> None:
    assert describe("ollama-embed", "bge-m3", "http://127.0.0.1:11434/") == (
        "ollama-embed / bge-m3 @ http://127.0.0.1:11434/"
    )
    assert describe(None, None, None) == "? / ? @ ?"
    assert describe("ollama-embed", "bge-m3", "") == "ollama-embed / bge-m3 @ ?"


def test_describe_names_the_resolved_model_of_an_in_process_provider() -> None:
    """README: describe() tells which model ``local`` resolved to, with no ``?`` in it."""
    assert describe("hash", "hash-64", "") == "hash / hash-64 (in-process)"
    text = describe("local", "intfloat/multilingual-e5-small", "")
    assert "?" not in text and "multilingual-e5-small" in text


def test_the_fingerprint_still_hashes_the_raw_url_with_its_credentials() -> None:
    url = "http://alice:hunter2-pw@ollama.lan:11434"

    expected = hashlib.sha256(f"ollama-embed|bge-m3|{url}".encode()).hexdigest()

    assert fingerprint("ollama-embed", "bge-m3", url) == expected
    assert fingerprint("ollama-embed", "bge-m3", url) != fingerprint(
        "ollama-embed", "bge-m3", "http://***@ollama.lan:11434"
    )
