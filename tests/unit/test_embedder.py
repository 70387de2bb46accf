"""The :class:`Embedder` facade: query cache, batching and validation (no network)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from amrita_memory_pg.domain.errors import EmbeddingError
from amrita_memory_pg.domain.fingerprint import fingerprint
from amrita_memory_pg.embedding.base import Embedder, EmbeddingProvider, TextKind


class CountingProvider(EmbeddingProvider):
    """Vectors derived from the text length; records every batch it was asked for."""

    protocol = "test"
    base_url = "http://test"

    def __init__(self, dim: int = 4) -> None:
        self.model = "counting-v1"
        self.dim = dim
        self.calls: list[tuple[list[str], TextKind]] = []
        self.override: list[Sequence[float]] | None = None

    async def embed(self, texts: Sequence[str], kind: TextKind) -> list[Sequence[float]]:
        self.calls.append((list(texts), kind))
        if self.override is not None:
            return self.override
        return [[float(len(t)), 1.0, *([0.5] * (self.dim - 2))] for t in texts]


@pytest.fixture
def provider() -> CountingProvider:
    return CountingProvider()


async def test_a_repeated_query_is_served_from_the_cache(provider: CountingProvider) -> None:
    embedder = Embedder(provider)

    first = await embedder.embed_query("what does the user like")
    second = await embedder.embed_query("what does the user like")

    assert provider.calls == [(["what does the user like"], "query")]
    np.testing.assert_array_equal(first, second)


async def test_the_query_cache_is_keyed_by_fingerprint(provider: CountingProvider) -> None:
    embedder = Embedder(provider)
    await embedder.embed_query("q")

    provider.model = "counting-v2"  # another model: a cached vector would be wrong
    await embedder.embed_query("q")

    assert len(provider.calls) == 2
    assert embedder.fingerprint == fingerprint("test", "counting-v2", "http://test")


async def test_the_query_cache_evicts_the_least_recently_used(
    provider: CountingProvider,
) -> None:
    embedder = Embedder(provider, cache_size=2)
    for text in ["a", "b", "a", "c", "a", "b"]:  # "c" evicts "b" (the least recent)
        await embedder.embed_query(text)

    assert [texts for texts, _ in provider.calls] == [["a"], ["b"], ["c"], ["b"]]


async def test_a_zero_cache_size_disables_the_cache(provider: CountingProvider) -> None:
    embedder = Embedder(provider, cache_size=0)

    await embedder.embed_query("q")
    await embedder.embed_query("q")

    assert len(provider.calls) == 2


async def test_passages_are_never_cached(provider: CountingProvider) -> None:
    embedder = Embedder(provider)

    await embedder.embed_passages(["p"])
    await embedder.embed_passages(["p"])

    assert provider.calls == [(["p"], "passage"), (["p"], "passage")]


@pytest.mark.parametrize(
    ("count", "batch_size", "sizes"),
    [(7, 3, [3, 3, 1]), (6, 3, [3, 3]), (1, 32, [1]), (0, 4, []), (5, 1, [1] * 5)],
)
async def test_batching_splits_texts_in_order(
    provider: CountingProvider, count: int, batch_size: int, sizes: list[int]
) -> None:
    texts = ["x" * (i + 1) for i in range(count)]
    embedder = Embedder(provider, batch_size=batch_size)

    vectors = await embedder.embed_passages(texts)

    assert [len(batch) for batch, _ in provider.calls] == sizes
    assert [float(v[0]) for v in vectors] == [float(i + 1) for i in range(count)]
    assert all(v.dtype == np.float32 for v in vectors)


async def test_a_wrong_number_of_vectors_is_an_error_naming_the_provider(
    provider: CountingProvider,
) -> None:
    provider.override = [[1.0, 0.0, 0.0, 0.0]]

    with pytest.raises(EmbeddingError) as info:
        await Embedder(provider).embed_passages(["a", "b"])

    assert "got 1 vectors for 2 texts" in str(info.value)
    assert "test / counting-v1 @ http://test" in str(info.value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
async def test_a_non_finite_vector_is_an_error(provider: CountingProvider, bad: float) -> None:
    provider.override = [[1.0, bad, 0.0, 0.0]]

    with pytest.raises(EmbeddingError, match="NaN or infinity"):
        await Embedder(provider).embed_passages(["a"])


@pytest.mark.parametrize("bad", [[], [[1.0, 2.0]], ["a", "b"], None])
async def test_a_malformed_vector_is_an_error(provider: CountingProvider, bad: object) -> None:
    provider.override = [bad]

    with pytest.raises(EmbeddingError):
        await Embedder(provider).embed_passages(["a"])


async def test_a_dimension_change_between_calls_is_an_error(
    provider: CountingProvider,
) -> None:
    embedder = Embedder(provider)
    await embedder.embed_passages(["a"])
    provider.dim = 6

    with pytest.raises(EmbeddingError, match="dimension 6, expected 4"):
        await embedder.embed_query("b")
    assert embedder.dim == 4


async def test_a_dimension_change_within_one_batch_is_an_error(
    provider: CountingProvider,
) -> None:
    provider.override = [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]

    with pytest.raises(EmbeddingError, match="dimension 4, expected 3"):
        await Embedder(provider).embed_passages(["a", "b"])


async def test_a_failed_query_is_not_cached(provider: CountingProvider) -> None:
    embedder = Embedder(provider)
    provider.override = [[math.nan, 0.0, 0.0, 0.0]]
    with pytest.raises(EmbeddingError):
        await embedder.embed_query("q")

    provider.override = None
    vector = await embedder.embed_query("q")

    assert np.all(np.isfinite(vector))
    assert len(provider.calls) == 2
