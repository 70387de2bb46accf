"""Ollama embeddings (``EMBEDDING_PROCTOL=ollama-embed``, reference §7.1).

``POST {base}/api/embed`` with ``{"model", "input": [texts]}`` → ``{"embeddings": [...]}``;
no auth header (the API key is ignored for this protocol, as in the reference). Servers
older than Ollama 0.2 lack ``/api/embed`` and answer a plain-text 404; then the provider
uses ``/api/embeddings`` (one text per request) for the rest of its life. A *JSON* 404
(``{"error": "model 'x' not found"}``) comes from a current server and is an error.

``model_name = "auto"`` is resolved once through ``GET {base}/api/tags``. The fingerprint
is still computed from the *configured* strings, ``sha256("ollama-embed|auto|<url>")``,
exactly as the reference computed it, so that an existing database keeps matching; the
resolved name is kept in :attr:`OllamaProvider.resolved_model` and sent in requests. The
cost: pulling a different embedding model under ``auto`` goes unnoticed — pin the name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from amrita_memory_pg.domain.errors import EmbeddingError
from amrita_memory_pg.embedding.base import EmbeddingProvider, TextKind
from amrita_memory_pg.embedding.http import (
    EmbeddingHTTPError,
    JsonHttpClient,
    json_error_message,
)

EMBED_PATH = "/api/embed"
LEGACY_PATH = "/api/embeddings"
TAGS_PATH = "/api/tags"
#: Embedding families whose names lack "embed"; anything containing "embed" is taken first.
KNOWN_EMBEDDING_FAMILIES = (
    "bge-",
    "all-minilm",
    "paraphrase-multilingual",
    "multilingual-e5",
    "e5-",
    "gte-",
)


def embed_url(base_url: str) -> str:
    """The reference's rule: the base as is if it ends with ``/api/embed``, else append it."""
    if base_url.endswith(EMBED_PATH):
        return base_url
    return base_url.rstrip("/") + EMBED_PATH


def server_root(base_url: str) -> str:
    """The server URL without ``/api/embed`` or a trailing slash (for tags, legacy)."""
    if base_url.endswith(EMBED_PATH):
        base_url = base_url[: -len(EMBED_PATH)]
    return base_url.rstrip("/")


def pick_embedding_model(names: Sequence[str]) -> str | None:
    """The first name containing ``embed``, else the first of a known embedding family."""
    for name in names:
        if "embed" in name.lower():
            return name
    for name in names:
        if name.lower().startswith(KNOWN_EMBEDDING_FAMILIES):
            return name
    return None


class OllamaProvider(EmbeddingProvider):
    """Batched Ollama embeddings with ``auto`` resolution and the old-server fallback."""

    protocol = "ollama-embed"

    def __init__(
        self,
        model_url: str,
        model_name: str = "auto",
        *,
        timeout_seconds: float = 60.0,
        max_retries: int = 2,
        backoff_seconds: float = 0.25,
    ) -> None:
        self.model = model_name
        self.base_url = model_url
        self.resolved_model: str | None = None if model_name == "auto" else model_name
        self._embed_url = embed_url(model_url)
        self._root = server_root(model_url)
        self._legacy = False
        self._resolve_lock = asyncio.Lock()
        self._http = JsonHttpClient(
            service=f"{self.protocol} / {model_name}",
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
            backoff_seconds=backoff_seconds,
        )

    @property
    def uses_legacy_endpoint(self) -> bool:
        """True once the server turned out to predate ``/api/embed``."""
        return self._legacy

    def _label(self) -> str:
        if self.model == "auto" and self.resolved_model:
            return f"{self.protocol} / auto={self.resolved_model}"
        return f"{self.protocol} / {self.model}"

    async def prepare(self) -> None:
        await self._model_name()

    async def embed(self, texts: Sequence[str], kind: TextKind) -> list[Sequence[float]]:
        """One request per batch; ``kind`` is ignored (the reference adds no prefixes)."""
        if not texts:
            return []
        model = await self._model_name()
        if not self._legacy:
            try:
                body = await self._http.request_json(
                    "POST",
                    self._embed_url,
                    label=self._label(),
                    payload={"model": model, "input": list(texts)},
                )
            except EmbeddingHTTPError as exc:
                if exc.status != 404 or json_error_message(exc.body) is not None:
                    raise
                self._legacy = True  # plain 404: no such route, an Ollama older than 0.2
            else:
                return self._parse_batch(body, len(texts))
        return [await self._embed_legacy(model, text) for text in texts]

    def _parse_batch(self, body: Any, count: int) -> list[Sequence[float]]:
        self._raise_on_error_key(body, self._embed_url)
        vectors = body.get("embeddings") if isinstance(body, dict) else None
        if not isinstance(vectors, list) or len(vectors) != count:
            got = len(vectors) if isinstance(vectors, list) else "no"
            raise EmbeddingError(
                f"{self._http.where('POST', self._embed_url, label=self._label())} returned "
                f"{got} embeddings for {count} texts"
            )
        return vectors

    async def _embed_legacy(self, model: str, text: str) -> Sequence[float]:
        url = self._root + LEGACY_PATH
        body = await self._http.request_json(
            "POST", url, label=self._label(), payload={"model": model, "prompt": text}
        )
        self._raise_on_error_key(body, url)
        vector = body.get("embedding") if isinstance(body, dict) else None
        if not isinstance(vector, list):
            raise EmbeddingError(
                f"{self._http.where('POST', url, label=self._label())} returned no 'embedding'"
            )
        return vector

    def _raise_on_error_key(self, body: Any, url: str) -> None:
        if isinstance(body, dict) and body.get("error"):
            where = self._http.where("POST", url, label=self._label())
            raise EmbeddingError(self._http.redact(f"{where}: Ollama error: {body['error']}"))

    async def _model_name(self) -> str:
        """The configured name, or for ``auto`` the model picked from ``/api/tags`` once."""
        if self.resolved_model is not None:
            return self.resolved_model
        async with self._resolve_lock:
            if self.resolved_model is None:
                self.resolved_model = await self._resolve_auto()
        return self.resolved_model

    async def _resolve_auto(self) -> str:
        url = self._root + TAGS_PATH
        body = await self._http.request_json("GET", url, label=self._label())
        models = body.get("models") if isinstance(body, dict) else None
        names = [
            str(item.get("name") or item.get("model"))
            for item in (models if isinstance(models, list) else [])
            if isinstance(item, dict) and (item.get("name") or item.get("model"))
        ]
        picked = pick_embedding_model(names)
        if picked is None:
            listed = ", ".join(names) if names else "none"
            raise EmbeddingError(
                self._http.redact(
                    f"{self._label()}: EMBEDDING_MODEL_NAME is 'auto' but the server at "
                    f"{self._root} lists no embedding model (models: {listed}). Pull one "
                    "(e.g. `ollama pull bge-m3`) or set EMBEDDING_MODEL_NAME."
                )
            )
        return picked

    async def aclose(self) -> None:
        await self._http.aclose()
