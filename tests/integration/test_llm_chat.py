"""The chat client's success and failure paths against a real loopback server (ScriptedLLM)."""

from __future__ import annotations

import base64
import logging
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from amrita_memory_pg.domain.ports import ChatResult, TokenUsage
from amrita_memory_pg.llm.chat import ChatClient, LlmError
from amrita_memory_pg.settings import LlmSettings
from amrita_memory_pg.testing_llm import ScriptedLLM

KEY = "sk-chat-0123456789abcdefXYZ"
MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "你好"}]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        yield stub


@pytest.fixture
async def client(llm: ScriptedLLM) -> AsyncIterator[Callable[..., ChatClient]]:
    """Build clients on the stub (fast backoff); all are closed after the test."""
    opened: list[ChatClient] = []

    def make(
        *,
        base_url: str | None = None,
        api_key: str = KEY,
        timeout_seconds: float = 5.0,
        max_retries: int = 2,
        backoff_seconds: float = 0.01,
    ) -> ChatClient:
        settings = LlmSettings(
            base_url=base_url or llm.base_url,
            model="stub-model",
            api_key=api_key,
            timeout_seconds=timeout_seconds,
        )
        made = ChatClient(settings, max_retries=max_retries, backoff_seconds=backoff_seconds)
        opened.append(made)
        return made

    yield make
    for made in opened:
        await made.aclose()


async def _fail(call: Any) -> LlmError:
    with pytest.raises(LlmError) as info:
        await call
    return info.value


def _everything_printed(error: BaseException, caplog: pytest.LogCaptureFixture) -> str:
    """The error's message, repr, the whole chained traceback and every log line."""
    return "\n".join(
        [
            str(error),
            repr(error),
            "".join(traceback.format_exception(error)),
            *(r.getMessage() for r in caplog.records),
        ]
    )


# ----- success ---------------------------------------------------------------------------


async def test_a_completion_returns_the_message_and_the_reported_token_usage(
    llm: ScriptedLLM, client: Callable[..., ChatClient]
) -> None:
    llm.usage = {"prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25}
    llm.call("read_memo", {})
    tools = [{"type": "function", "function": {"name": "read_memo", "parameters": {}}}]

    result = await client().complete(MESSAGES, tools)

    assert isinstance(result, ChatResult)
    assert result.message["tool_calls"][0]["function"]["name"] == "read_memo"
    assert result.usage == TokenUsage(prompt_tokens=21, completion_tokens=4, total_tokens=25)
    (sent,) = llm.requests
    assert sent["model"] == "stub-model"
    assert sent["tools"] == tools
    assert sent["tool_choice"] == "auto"
    assert llm.request_headers[0]["authorization"] == f"Bearer {KEY}"


async def test_an_answer_without_usage_reports_zero_tokens(
    llm: ScriptedLLM, client: Callable[..., ChatClient]
) -> None:
    llm.say("hi")

    result = await client().complete(MESSAGES)

    assert result.message["content"] == "hi"
    assert result.usage == TokenUsage(0, 0, 0)
    assert "tools" not in llm.requests[0]


# ----- transient failures are retried ----------------------------------------------------


async def test_a_500_is_retried_and_the_second_answer_is_returned_with_its_usage(
    llm: ScriptedLLM, client: Callable[..., ChatClient]
) -> None:
    llm.usage = {"prompt_tokens": 7, "completion_tokens": 2}
    llm.fail(500, "upstream overloaded")
    llm.say("second time lucky")

    result = await client(max_retries=2).complete(MESSAGES)

    assert result.message["content"] == "second time lucky"
    assert result.usage == TokenUsage(7, 2, 9)
    assert len(llm.requests) == 2
    assert llm.requests[0] == llm.requests[1]  # the same request, sent again


async def test_a_429_waits_for_retry_after_before_the_retry(
    llm: ScriptedLLM, client: Callable[..., ChatClient]
) -> None:
    llm.fail(429, "rate limited", retry_after="0.4")
    llm.say("ok")
    started = time.monotonic()

    result = await client(backoff_seconds=0.01).complete(MESSAGES)

    assert time.monotonic() - started >= 0.4  # the server's wait, not the 0.01 s backoff
    assert result.message["content"] == "ok"
    assert len(llm.requests) == 2


async def test_persistent_503_fails_after_all_attempts_naming_url_status_and_attempts(
    llm: ScriptedLLM, client: Callable[..., ChatClient]
) -> None:
    for _ in range(3):
        llm.fail(503, "maintenance")

    error = await _fail(client(max_retries=2).complete(MESSAGES))

    message = str(error)
    assert message.startswith(f"llm / stub-model: POST {llm.base_url}/chat/completions failed")
    assert "HTTP 503 after 3 attempts" in message
    assert "maintenance" in message
    assert (error.status, error.attempts) == (503, 3)
    assert len(llm.requests) == 3


async def test_a_refused_connection_is_a_clear_error_with_the_attempts_counted(
    client: Callable[..., ChatClient],
) -> None:
    with ScriptedLLM() as gone:
        url = gone.base_url  # a port that was free a moment ago and is closed now

    error = await _fail(client(base_url=url, max_retries=2).complete(MESSAGES))

    message = str(error)
    assert f"POST {url}/chat/completions failed after 3 attempts" in message
    assert "connection error (ConnectError" in message
    assert (error.status, error.attempts) == (None, 3)


async def test_a_slow_endpoint_times_out_after_bounded_attempts(
    llm: ScriptedLLM, client: Callable[..., ChatClient]
) -> None:
    llm.delay_seconds = 1.0
    started = time.monotonic()

    error = await _fail(client(timeout_seconds=0.2, max_retries=1).complete(MESSAGES))

    assert time.monotonic() - started < 1.0
    assert "timed out (ReadTimeout, timeout 0.2 s)" in str(error)
    assert "after 2 attempts" in str(error)
    assert error.attempts == 2


# ----- permanent failures are not retried ------------------------------------------------


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        ("{not json", "body that is not JSON"),
        ('{"id": "x", "choices": []}', "returned no choices"),
        ('{"choices": [{"index": 0, "message": "flat text"}]}', "returned a malformed message"),
        ('{"error": {"message": "insufficient quota"}}', "returned an error"),
    ],
)
async def test_an_unusable_200_answer_is_an_llm_error_without_a_retry(
    llm: ScriptedLLM, client: Callable[..., ChatClient], body: str, complaint: str
) -> None:
    llm.raw(200, body)

    error = await _fail(client(max_retries=3).complete(MESSAGES))

    assert complaint in str(error)
    assert f"llm / stub-model: POST {llm.base_url}/chat/completions" in str(error)
    assert len(llm.requests) == 1


async def test_a_400_fails_at_once(llm: ScriptedLLM, client: Callable[..., ChatClient]) -> None:
    llm.fail(400, "unknown model stub-model")

    error = await _fail(client(max_retries=3).complete(MESSAGES))

    assert "HTTP 400 after 1 attempt: " in str(error)
    assert "unknown model stub-model" in str(error)
    assert len(llm.requests) == 1


# ----- secrets ---------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "attempts"), [(401, 1), (500, 2)])
async def test_an_endpoint_echoing_the_bearer_key_leaks_it_nowhere(
    llm: ScriptedLLM,
    client: Callable[..., ChatClient],
    caplog: pytest.LogCaptureFixture,
    status: int,
    attempts: int,
) -> None:
    caplog.set_level(logging.DEBUG)
    for _ in range(attempts):
        llm.fail(status, "invalid credentials", echo_authorization=True)

    error = await _fail(client(max_retries=1).complete(MESSAGES))

    assert llm.request_headers[0]["authorization"] == f"Bearer {KEY}"  # the echo had the key
    assert (error.status, error.attempts) == (status, attempts)
    assert f"HTTP {status} after" in str(error)
    assert "Authorization: ***" in str(error)
    if status == 500:  # the retry was logged, redacted too
        assert any("retrying" in r.getMessage() for r in caplog.records)
    assert KEY not in _everything_printed(error, caplog)


async def test_credentials_in_the_endpoint_url_are_printed_redacted(
    llm: ScriptedLLM, client: Callable[..., ChatClient], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    host_and_path = llm.base_url.removeprefix("http://")
    # httpx turns URL credentials into a Basic header; an echo of it must not leak either.
    basic = base64.b64encode(b"proxyuser:pr0xy-pa55").decode()
    llm.fail(503, f"down; basic token was {basic}", echo_authorization=True)
    llm.fail(503, f"down; basic token was {basic}", echo_authorization=True)

    error = await _fail(
        client(base_url=f"http://proxyuser:pr0xy-pa55@{host_and_path}", max_retries=1).complete(
            MESSAGES
        )
    )

    assert f"POST http://***@{host_and_path}/chat/completions failed" in str(error)
    assert any("HTTP Request" in r.getMessage() for r in caplog.records)  # httpx's own log
    assert llm.request_headers[0]["authorization"] == f"Basic {basic}"
    printed = _everything_printed(error, caplog)
    assert "pr0xy-pa55" not in printed
    assert basic not in printed
    assert KEY not in printed
