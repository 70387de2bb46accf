"""Test helpers shipped with the package, for our tests and for code built on top of it.

:class:`StubEmbeddingServer` is a real HTTP server on a random loopback port that speaks
the embedding protocols we support (Ollama ``/api/embed``, ``/api/embeddings``,
``/api/tags``; OpenAI ``…/embeddings`` under any base path). Its vectors come from the
deterministic hashing embedder, so a test can compute the expected vector of any text,
and it can be scripted to fail, stall or demand an API key. Real HTTP rather than a
mocked transport, so that timeouts, retries and status handling are exercised exactly
as in production. Importing this module starts nothing.

Example::

    with StubEmbeddingServer(dim=384, fail_on_batch={2: 500}) as server:
        provider = OllamaProvider(server.url, "bge-m3", max_retries=0)
        ...  # the second embedding request answers HTTP 500
        assert len(server.embedding_requests) == 2
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import numpy as np

from amrita_memory_pg.embedding.hashing import HashingProvider

__all__ = ["RecordedRequest", "StubEmbeddingServer"]

#: What ``/api/tags`` lists unless told otherwise: one embedding model, one chat model.
DEFAULT_MODELS = ("qwen2.5:7b", "nomic-embed-text:latest")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stub received it. Header names are lower-case."""

    method: str
    path: str
    body: Any
    headers: Mapping[str, str]
    #: True for requests answered as embedding calls (these are the ones counted).
    embedding: bool

    @property
    def texts(self) -> list[str]:
        """The texts of an embedding request (``input`` or ``prompt``), else ``[]``."""
        if not isinstance(self.body, dict):
            return []
        value = self.body.get("input", self.body.get("prompt"))
        if isinstance(value, str):
            return [value]
        return [str(v) for v in value] if isinstance(value, list) else []


class StubEmbeddingServer:
    """A scriptable Ollama/OpenAI embedding server; use it as a context manager.

    Every option is a plain attribute that may also be changed while the server runs
    (e.g. set ``dim = 1024`` to simulate a model change):

    * ``dim``: vector dimension; the vector of ``text`` is :meth:`vector` ``(text)``.
    * ``models``: names listed by ``GET /api/tags``.
    * ``fail_on_batch``: ``{k: status}`` answers the k-th embedding request (1-based,
      counting every embedding request including retries and the per-text requests of
      ``/api/embeddings``; requests refused for a missing key are not counted) with that
      HTTP status and a JSON body ``{"error": "..."}``. With ``max_retries=0`` on the
      client, request k is batch k.
    * ``fail_always``: answer every embedding request with this status.
    * ``retry_after``: a ``Retry-After`` header value sent with every 429 and 5xx answer.
    * ``delay_seconds``: sleep before answering an embedding request (for timeouts).
    * ``old_ollama``: behave like Ollama < 0.2: ``/api/embed`` answers a plain-text 404.
    * ``require_api_key``: refuse requests without ``Authorization: Bearer <key>`` (401).
    * ``ollama_error``: Ollama endpoints answer HTTP 200 with ``{"error": ollama_error}``.
    * ``shuffle_index``: OpenAI ``data`` comes in reverse order (``index`` stays right).
    * ``base64_vectors``: OpenAI embeddings are base64 float32 strings.
    """

    def __init__(
        self,
        *,
        dim: int = 384,
        models: Sequence[str] = DEFAULT_MODELS,
        fail_on_batch: Mapping[int, int] | None = None,
        fail_always: int | None = None,
        retry_after: str | None = None,
        delay_seconds: float = 0.0,
        old_ollama: bool = False,
        require_api_key: str | None = None,
        ollama_error: str | None = None,
        shuffle_index: bool = False,
        base64_vectors: bool = False,
    ) -> None:
        self.dim = dim
        self.models = list(models)
        self.fail_on_batch = dict(fail_on_batch or {})
        self.fail_always = fail_always
        self.retry_after = retry_after
        self.delay_seconds = delay_seconds
        self.old_ollama = old_ollama
        self.require_api_key = require_api_key
        self.ollama_error = ollama_error
        self.shuffle_index = shuffle_index
        self.base64_vectors = base64_vectors
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._embedding_count = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free loopback port and serve from a daemon thread."""
        if self._httpd is not None:
            return self
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.stub = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; handlers still sleeping in ``delay_seconds`` are abandoned."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ----- what tests look at ----------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the Ollama base URL."""
        if self._httpd is None:
            raise RuntimeError("StubEmbeddingServer is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_url(self) -> str:
        """``<url>/v1``: an OpenAI base URL (``/embeddings`` works under any base)."""
        return self.url + "/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        """The requests answered as embedding calls (the ones ``fail_on_batch`` counts)."""
        return [r for r in self.requests if r.embedding]

    def vector(self, text: str) -> list[float]:
        """The vector this server returns for ``text`` at the current ``dim``."""
        values: list[float] = HashingProvider(self.dim).vector(text).tolist()
        return values

    def reset(self) -> None:
        """Forget recorded requests and restart the ``fail_on_batch`` count."""
        with self._lock:
            self._requests.clear()
            self._embedding_count = 0

    # ----- request handling (called from server threads) -------------------------------

    def _record(self, request: RecordedRequest) -> int:
        """Store the request; for an embedding request return its 1-based number."""
        with self._lock:
            self._requests.append(request)
            if request.embedding:
                self._embedding_count += 1
            return self._embedding_count

    def _handle(
        self, method: str, path: str, body: Any, headers: dict[str, str]
    ) -> tuple[int, Any]:
        """(status, JSON body or a ``str`` sent as plain text) for one request."""
        route = _route(method, path, old_ollama=self.old_ollama)
        authorised = (
            self.require_api_key is None
            or headers.get("authorization") == f"Bearer {self.require_api_key}"
        )
        is_embedding = route in ("embed", "legacy", "openai") and authorised
        number = self._record(RecordedRequest(method, path, body, headers, is_embedding))
        if route is None:
            return 404, "404 page not found"
        if not authorised:
            return 401, {
                "error": {
                    "message": "Incorrect API key provided.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            }
        if route == "tags":
            return 200, {"models": [{"name": m, "model": m} for m in self.models]}
        status = self.fail_always or self.fail_on_batch.get(number)
        if status:
            model = body.get("model") if isinstance(body, dict) else None
            return status, {
                "error": f"stub: scripted HTTP {status} on request {number} for model {model!r}"
            }
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        if not isinstance(body, dict):
            return 400, {"error": "request body must be a JSON object"}
        if route != "openai" and self.ollama_error:
            return 200, {"error": self.ollama_error}
        texts = RecordedRequest(method, path, body, headers, True).texts
        vectors = [self.vector(text) for text in texts]
        model = body.get("model", "")
        if route == "embed":
            return 200, {"model": model, "embeddings": vectors}
        if route == "legacy":
            return 200, {"embedding": vectors[0] if vectors else []}
        data = [
            {"object": "embedding", "index": i, "embedding": self._openai_vector(v)}
            for i, v in enumerate(vectors)
        ]
        if self.shuffle_index:
            data.reverse()
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return 200, {"object": "list", "data": data, "model": model, "usage": usage}

    def _openai_vector(self, vector: list[float]) -> list[float] | str:
        if not self.base64_vectors:
            return vector
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _route(method: str, path: str, *, old_ollama: bool) -> str | None:
    """Which endpoint a request hits: embed, legacy, tags, openai, or None (404)."""
    path = path.split("?", 1)[0].rstrip("/")
    if method == "GET" and path.endswith("/api/tags"):
        return "tags"
    if method != "POST":
        return None
    if path.endswith("/api/embed"):
        return None if old_ollama else "embed"
    if path.endswith("/api/embeddings"):
        return "legacy"
    if path.endswith("/embeddings"):
        return "openai"
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # socketserver's default listen backlog is 5: under a few hundred concurrent clients
    # (bench/load.py) connections beyond it are dropped and retried after a 1 s SYN
    # timeout, so the stub, not the code under test, became the bottleneck.
    request_queue_size = 1024
    stub: StubEmbeddingServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout) closes its socket: not worth a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # Keep-alive, as Ollama and OpenAI servers do (every reply has a Content-Length): a
    # new TCP connection per request made the stub the bottleneck under load.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed ACK

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", errors="replace")
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            status, payload = self.server.stub._handle(method, self.path, body, headers)
        except Exception as exc:  # the edge of the stub: report a bug in it to the client
            status, payload = 500, f"stub bug: {type(exc).__name__}: {exc}"
        if isinstance(payload, str):
            data, content_type = payload.encode(), "text/plain; charset=utf-8"
        else:
            data, content_type = json.dumps(payload).encode(), "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            retry_after = self.server.stub.retry_after
            if retry_after is not None and (status == 429 or status >= 500):
                self.send_header("Retry-After", retry_after)
            self.end_headers()
            self.wfile.write(data)
        except ConnectionError:
            pass  # the client timed out and left

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr line."""
        return None
