"""A scripted OpenAI-compatible chat-completions server for tests and demos.

Real HTTP on 127.0.0.1 (a stdlib server in a daemon thread), so the client, the
responder and the bot are exercised end to end. Each POST to ``…/chat/completions``
records the request body and answers with the next scripted assistant message.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedLLM:
    """``with ScriptedLLM() as llm: llm.say("hi"); … llm.base_url …``"""

    def __init__(self) -> None:
        self.script: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
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

    def reset(self) -> None:
        with self._lock:
            self.script.clear()
            self.requests.clear()

    # -- the server
    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            message = (
                self.script.popleft()
                if self.script
                else {"role": "assistant", "content": "（stub：脚本已用完）"}
            )
        return {
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

    def start(self) -> ScriptedLLM:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                payload = json.dumps(owner._answer(json.loads(raw)), ensure_ascii=False).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
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
