"""The provider interface and :class:`Embedder`, the facade every store uses.

Providers only turn a batch of texts into vectors. The facade adds what every caller
needs: batching, a small LRU cache for repeated query texts (keyed by fingerprint, so a
model change can never serve a stale vector), and validation (one finite vector per
text, one dimension), raising :class:`EmbeddingError` that names the provider. Texts
are always embedded *before* any transaction or lock is taken.
"""

from __future__ import annotations

import abc
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from amrita_memory_pg import metrics
from amrita_memory_pg.domain.errors import EmbeddingError
from amrita_memory_pg.domain.fingerprint import describe, fingerprint

Vector = npt.NDArray[np.float32]
#: e5-style models embed queries and passages with different prefixes.
TextKind = Literal["query", "passage"]


class EmbeddingProvider(abc.ABC):
    """Turns texts into vectors. Subclasses set ``protocol``, ``model`` and ``base_url``."""

    protocol: str
    model: str
    base_url: str

    @abc.abstractmethod
    async def embed(self, texts: Sequence[str], kind: TextKind) -> list[Sequence[float]]:
        """One vector per text, in order. Raise :class:`EmbeddingError` on failure."""

    async def prepare(self) -> None:
        """Resolve ``auto`` and load the model now rather than on the first embed.

        Call it before comparing :attr:`fingerprint` with the stored one: a provider whose
        fingerprint depends on the model it could load (local) settles it here.
        """
        return None

    async def aclose(self) -> None:
        """Release connections or threads."""
        return None

    @property
    def fingerprint(self) -> str:
        """sha256(protocol|model|base_url): what the stored vectors are tagged with."""
        return fingerprint(self.protocol, self.model, self.base_url)

    def describe(self) -> str:
        return describe(self.protocol, self.model, self.base_url)


class Embedder:
    """Batching, validation and a query cache around one provider."""

    def __init__(
        self, provider: EmbeddingProvider, *, batch_size: int = 32, cache_size: int = 256
    ) -> None:
        self.provider = provider
        self.batch_size = max(1, batch_size)
        self.cache_size = max(0, cache_size)
        self._cache: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self.dim: int | None = None

    @property
    def fingerprint(self) -> str:
        return self.provider.fingerprint

    def describe(self) -> str:
        return self.provider.describe()

    async def prepare(self) -> None:
        """See :meth:`EmbeddingProvider.prepare`."""
        await self.provider.prepare()

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """Vectors for stored documents (memories, knowledge)."""
        return await self._embed(list(texts), "passage")

    def cached_query(self, text: str) -> Vector | None:
        """The query's vector when it was asked before (no provider call), else None."""
        cached = self._cache.get((self.fingerprint, text))
        if cached is not None:
            self._cache.move_to_end((self.fingerprint, text))
        return cached

    async def embed_query(self, text: str) -> Vector:
        """The vector of one search query, from the cache when it was asked before."""
        cached = self.cached_query(text)
        if cached is not None:
            return cached
        key = (self.fingerprint, text)
        (vector,) = await self._embed([text], "query")
        if self.cache_size:
            self._cache[key] = vector
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return vector

    async def _embed(self, texts: list[str], kind: TextKind) -> list[Vector]:
        out: list[Vector] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            started, ok = time.perf_counter(), False
            try:
                raw = await self.provider.embed(batch, kind)
                ok = True
            finally:
                metrics.observe_embedding(
                    self.provider.protocol, kind, len(batch), ok, time.perf_counter() - started
                )
            if len(raw) != len(batch):
                raise EmbeddingError(
                    f"{self.describe()}: got {len(raw)} vectors for {len(batch)} texts"
                )
            for item in raw:
                try:
                    vector = np.asarray(item, dtype=np.float32)
                except (TypeError, ValueError) as exc:
                    raise EmbeddingError(
                        f"{self.describe()}: returned a vector that is not numbers ({exc})"
                    ) from exc
                if vector.ndim != 1 or vector.size == 0:
                    raise EmbeddingError(
                        f"{self.describe()}: returned a malformed vector (shape {vector.shape})"
                    )
                if not np.all(np.isfinite(vector)):
                    raise EmbeddingError(
                        f"{self.describe()}: returned a vector with NaN or infinity"
                    )
                if self.dim is None:
                    self.dim = int(vector.size)
                elif vector.size != self.dim:
                    raise EmbeddingError(
                        f"{self.describe()}: returned dimension {vector.size}, expected {self.dim}"
                    )
                out.append(vector)
        return out

    async def aclose(self) -> None:
        await self.provider.aclose()
