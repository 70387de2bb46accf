"""OpenAI-compatible embeddings (``EMBEDDING_PROCTOL=openai``, reference §7.1).

``POST {base}/embeddings`` where base is ``EMBEDDING_MODEL_URL`` without a trailing slash
(the reference handed that value to the OpenAI SDK as ``base_url``, e.g.
``https://api.openai.com/v1``). We ask for ``encoding_format: "float"`` but also decode
base64 float32 strings, which the SDK requests by default and some servers always send.
The answer's ``data`` is ordered by ``index``, not by position: the API does not promise
that they agree. ``auto`` is not a model name here (there is nothing to resolve it with),
so it is refused at construction.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

import numpy as np

from amrita_memory_pg.domain.errors import ConfigError, EmbeddingError
from amrita_memory_pg.embedding.base import EmbeddingProvider, TextKind
from amrita_memory_pg.embedding.http import JsonHttpClient


def embeddings_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/embeddings"


def decode_embedding(value: Any) -> Sequence[float] | None:
    """A float list as is, a base64 string as little-endian float32; None if neither."""
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) % 4:
            return None
        floats: list[float] = np.frombuffer(raw, dtype="<f4").tolist()
        return floats
    return None


class OpenAIProvider(EmbeddingProvider):
    """Batched embeddings from any server that speaks OpenAI's ``/embeddings``."""

    protocol = "openai"

    def __init__(
        self,
        model_url: str,
        model_name: str,
        api_key: str = "",
        *,
        timeout_seconds: float = 60.0,
        max_retries: int = 2,
        backoff_seconds: float = 0.25,
    ) -> None:
        if not model_name or model_name == "auto":
            raise ConfigError(
                "EMBEDDING_MODEL_NAME must name a model for the openai protocol "
                f"(got {model_name!r}; 'auto' is only understood by ollama-embed and local), "
                "e.g. text-embedding-3-small"
            )
        self.model = model_name
        self.base_url = model_url
        self._url = embeddings_url(model_url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = JsonHttpClient(
            service=f"{self.protocol} / {model_name}",
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
            headers=headers,
            secrets=[api_key],
            backoff_seconds=backoff_seconds,
        )

    async def embed(self, texts: Sequence[str], kind: TextKind) -> list[Sequence[float]]:
        """One request per batch; ``kind`` is ignored (the reference adds no prefixes)."""
        if not texts:
            return []
        label = f"{self.protocol} / {self.model}"
        body = await self._http.request_json(
            "POST",
            self._url,
            label=label,
            payload={"input": list(texts), "model": self.model, "encoding_format": "float"},
        )
        return self._parse(body, len(texts), self._http.where("POST", self._url, label=label))

    def _parse(self, body: Any, count: int, where: str) -> list[Sequence[float]]:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            error = body.get("error") if isinstance(body, dict) else None
            detail = f"error: {error}" if error else "no 'data' list"
            raise EmbeddingError(self._http.redact(f"{where} answered without vectors ({detail})"))
        by_index: dict[int, Sequence[float]] = {}
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise EmbeddingError(f"{where}: data[{position}] is not an object")
            index = item.get("index", position)
            vector = decode_embedding(item.get("embedding"))
            if not isinstance(index, int) or vector is None:
                raise EmbeddingError(f"{where}: data[{position}] has no usable index/embedding")
            by_index[index] = vector
        if len(data) != count or sorted(by_index) != list(range(count)):
            raise EmbeddingError(
                f"{where} returned {len(data)} vectors whose indices are not 0..{count - 1}"
            )
        return [by_index[i] for i in range(count)]

    async def aclose(self) -> None:
        await self._http.aclose()
