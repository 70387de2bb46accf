"""A scripted OpenAI-compatible chat-completions server for tests and demos.

Real HTTP on 127.0.0.1 (a stdlib server in a daemon thread), so the client, the
responder and the bot are exercised end to end — retries, timeouts and status handling
exactly as in production. Each POST to ``…/chat/completions`` records the request and
answers with the next scripted step: an assistant message (:meth:`ScriptedLLM.say`,
:meth:`ScriptedLLM.call`) or an HTTP failure (:meth:`ScriptedLLM.fail`,
:meth:`ScriptedLLM.raw`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class _HttpReply:
    """A scripted raw answer: status, body bytes, extra headers."""

    status: int
    body: str
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    #: append the request's ``Authorization`` header to the body (a server that echoes it)
    echo_authorization: bool = False


class ScriptedLLM:
    """``with ScriptedLLM() as llm: llm.say("hi"); … llm.base_url …``

    Plain attributes, changeable while it runs:

    * ``usage``: the ``usage`` member of every successful answer (None: no ``usage``).
    * ``delay_seconds``: sleep before answering (for client timeouts).
    """

    def __init__(self) -> None:
        self.script: deque[dict[str, Any] | _HttpReply] = deque()
        self.requests: list[dict[str, Any]] = []
        #: the body of each request as it came over the wire, in the order of ``requests``
        #: (a test checks that a cycle's requests share their prefix byte for byte)
        self.raw_requests: list[bytes] = []
        #: the headers of each request (names lower-case), in the order of ``requests``
        self.request_headers: list[dict[str, str]] = []
        self.usage: dict[str, Any] | None = None
        #: when set, the ``usage`` of each answer is computed from its request body (a
        #: bench counts the prompt's real tokens this way); wins over ``usage``
        self.usage_for: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.delay_seconds = 0.0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- the script
    def say(self, content: str) -> None:
        """Queue a plain answer."""
        self.script.append({"role": "assistant", "content": content})

    def call(self, name: str, arguments: dict[str, Any], *more: tuple[str, dict[str, Any]]) -> None:
        """Queue one assistant turn that calls one or more tools."""
        calls = [(name, arguments), *more]
        self.script.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{uuid.uuid4().hex[:8]}",
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)},
                    }
                    for n, a in calls
                ],
            }
        )

    def fail(
        self,
        status: int,
        message: str = "scripted failure",
        *,
        retry_after: str | None = None,
        echo_authorization: bool = False,
    ) -> None:
        """Queue an HTTP error answer with an OpenAI-style JSON error body.

        ``echo_authorization`` appends the request's ``Authorization`` header to the
        message, as some proxies and servers do in their error pages.
        """
        body = json.dumps({"error": {"message": message, "type": "stub_error"}})
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self.script.append(
            _HttpReply(status, body, headers=headers, echo_authorization=echo_authorization)
        )

    def raw(self, status: int, body: str, content_type: str = "application/json") -> None:
        """Queue an answer with exactly this body (malformed JSON, an answer without choices…)."""
        self.script.append(_HttpReply(status, body, content_type))

    def reset(self) -> None:
        with self._lock:
            self.script.clear()
            self.requests.clear()
            self.raw_requests.clear()
            self.request_headers.clear()

    # -- the server
    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def _next(
        self, body: dict[str, Any], headers: dict[str, str], raw: bytes
    ) -> dict[str, Any] | _HttpReply:
        with self._lock:
            self.requests.append(body)
            self.raw_requests.append(raw)
            self.request_headers.append(headers)
            if self.script:
                return self.script.popleft()
        return {"role": "assistant", "content": "（stub：脚本已用完）"}

    def _answer(self, body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "model": body.get("model", "stub"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
        }
        if self.usage_for is not None:
            answer["usage"] = self.usage_for(body)
        elif self.usage is not None:
            answer["usage"] = self.usage
        return answer

    def _reply(
        self, body: dict[str, Any], headers: dict[str, str], raw: bytes
    ) -> tuple[int, bytes, str, Mapping[str, str]]:
        """(status, body, content type, extra headers) for one completions request."""
        step = self._next(body, headers, raw)
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        if isinstance(step, _HttpReply):
            text = step.body
            if step.echo_authorization:
                text += f" (you sent Authorization: {headers.get('authorization', '<none>')})"
            return step.status, text.encode(), step.content_type, step.headers
        payload = json.dumps(self._answer(body, step), ensure_ascii=False).encode()
        return 200, payload, "application/json", {}

    def start(self) -> ScriptedLLM:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                headers = {name.lower(): value for name, value in self.headers.items()}
                status, payload, content_type, extra = owner._reply(json.loads(raw), headers, raw)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in extra.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except ConnectionError:
                    pass  # the client timed out and left

            def log_message(self, format: str, *args: Any) -> None:
                return

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A handler still sleeping in delay_seconds must not hold up stop().
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
