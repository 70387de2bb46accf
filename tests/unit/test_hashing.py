"""The hashing embedder: deterministic, unit norm, CJK-aware features."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amrita_memory_pg.embedding.hashing import HashingProvider, features


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


@given(st.text(max_size=200), st.sampled_from([8, 64, 384, 1024]))
@settings(max_examples=100, deadline=None)
def test_every_text_gets_a_deterministic_finite_unit_vector(text: str, dim: int) -> None:
    first = HashingProvider(dim).vector(text)
    second = HashingProvider(dim).vector(text)

    assert first.shape == (dim,)
    assert first.dtype == np.float32
    np.testing.assert_array_equal(first, second)
    assert np.all(np.isfinite(first))
    assert float(np.linalg.norm(first)) == pytest.approx(1.0, abs=1e-5)


def test_an_empty_or_symbol_only_text_gets_a_fixed_unit_vector() -> None:
    provider = HashingProvider(16)

    np.testing.assert_array_equal(provider.vector(""), provider.vector("?!… —"))
    assert provider.vector("")[0] == 1.0


def test_cjk_text_gives_character_and_bigram_features() -> None:
    assert features("川菜好吃") == ["川", "菜", "好", "吃", "川菜", "菜好", "好吃"]
    assert features("I like Sichuan food 2") == ["i", "like", "sichuan", "food", "2"]


def test_related_chinese_texts_are_closer_than_unrelated_ones() -> None:
    provider = HashingProvider(384)
    likes_spicy = provider.vector("我喜欢吃辣的川菜")
    also_spicy = provider.vector("用户很喜欢川菜，尤其是辣的")
    business_trip = provider.vector("明天要去北京出差")

    assert cosine(likes_spicy, also_spicy) > 0.3
    assert cosine(likes_spicy, also_spicy) > cosine(likes_spicy, business_trip) + 0.2


def test_case_does_not_matter_but_words_do() -> None:
    provider = HashingProvider(384)

    np.testing.assert_array_equal(provider.vector("Coffee Lover"), provider.vector("coffee lover"))
    assert cosine(provider.vector("coffee lover"), provider.vector("tea hater")) < 0.5


async def test_embed_returns_one_vector_per_text_in_order() -> None:
    provider = HashingProvider(32)

    vectors = await provider.embed(["a", "b", "a"], "passage")

    assert vectors[0] == vectors[2] != vectors[1]
    assert provider.model == "hash-32"
    assert provider.base_url == ""
