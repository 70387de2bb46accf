"""Token usage is read from the OpenAI ``usage`` member and never breaks a completion."""

from __future__ import annotations

from typing import Any

import pytest

from amrita_memory_pg.domain.ports import TokenUsage
from amrita_memory_pg.llm.chat import completions_url, usage_from


@pytest.mark.parametrize(
    ("raw", "usage"),
    [
        ({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}, TokenUsage(12, 3, 15)),
        ({"prompt_tokens": 12, "completion_tokens": 3}, TokenUsage(12, 3, 15)),  # total derived
        ({"total_tokens": 40}, TokenUsage(0, 0, 40)),
        ({"prompt_tokens": None, "completion_tokens": "7", "total_tokens": -1}, TokenUsage()),
        ({"prompt_tokens": True, "completion_tokens": 2.5}, TokenUsage()),
        (None, TokenUsage(0, 0, 0)),
        ([], TokenUsage()),
    ],
)
def test_usage_is_read_from_the_reply_and_is_zero_when_absent_or_malformed(
    raw: Any, usage: TokenUsage
) -> None:
    assert usage_from(raw) == usage


def test_usages_add_up_over_the_rounds_of_a_tool_loop() -> None:
    total = TokenUsage() + TokenUsage(10, 2, 12) + TokenUsage(30, 5, 35)

    assert total == TokenUsage(40, 7, 47)


def test_completions_url_appends_the_path_once() -> None:
    assert completions_url("http://h/v1/") == "http://h/v1/chat/completions"
    assert completions_url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"
