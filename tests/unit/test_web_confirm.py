"""The re-embed confirm page's "paid API" line: which endpoints count
as remote, i.e. where each embedded row is a request a hosted API may bill."""

from __future__ import annotations

import pytest

from amrita_memory_pg.web.pages.status import is_remote


@pytest.mark.parametrize(
    ("protocol", "url", "remote"),
    [
        ("openai", "https://api.openai.com/v1", True),
        ("ollama-embed", "http://10.0.0.5:11434", True),
        ("ollama-embed", "http://127.0.0.1:11434", False),
        ("openai", "http://localhost:8000/v1", False),
        ("openai", "http://[::1]:8000/v1", False),
        ("local", None, False),
        ("hash", "", False),
    ],
)
def test_remote_means_another_host(protocol: str, url: str | None, remote: bool) -> None:
    assert is_remote(protocol, url) is remote
