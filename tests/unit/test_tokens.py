"""Search tokens (domain/tokens.py): the one function both the write and the query use."""

from __future__ import annotations

from amrita_memory_pg.domain.tokens import (
    MAX_TOKEN_CHARS,
    MAX_TOKENS,
    STEM_CACHE_WORDS,
    _stemmer,
    query_tokens,
    search_tokens,
)


def test_chinese_gives_characters_and_pairs() -> None:
    tokens = search_tokens("小宋的科目二考试")
    for pair in ("小宋", "宋的", "科目", "目二", "二考", "考试"):
        assert pair in tokens
    for char in ("小", "宋", "科", "目", "二", "考", "试"):
        assert char in tokens
    assert "的" not in tokens  # a function character counts only inside pairs


def test_a_paraphrased_chinese_query_shares_the_words() -> None:
    fact = set(search_tokens("小宋的科目二考试定在2025年3月18日上午"))
    query = set(search_tokens("小宋科目二哪天考试"))
    assert {"小宋", "科目", "目二", "考试"} <= fact & query


def test_latin_words_are_lowered_stemmed_and_stop_words_dropped() -> None:
    assert search_tokens("When did Caroline go to the LGBTQ support group?") == [
        "carolin",
        "go",
        "lgbtq",
        "support",
        "group",
    ]
    assert search_tokens("painting") == search_tokens("Paints") == ["paint"]


def test_numbers_are_kept_without_leading_zeros() -> None:
    assert search_tokens("2024-05-03") == ["2024", "5", "3"]
    assert search_tokens("5月3日") == ["5", "月", "3", "日"]
    assert search_tokens("尾号 2046，车牌 00758") == [
        "尾",
        "号",
        "尾号",
        "2046",
        "车",
        "牌",
        "车牌",
        "758",
    ]
    assert search_tokens("0") == ["0"]


def test_mixed_script_and_full_width_text() -> None:
    assert search_tokens("Emily 的签证") == ["emili", "签", "证", "的签", "签证"]
    # NFKC: full-width digits and letters are the ASCII ones
    assert search_tokens("５月３日　ＡＢＣ") == ["5", "月", "3", "日", "abc"]
    assert search_tokens("iPhone15Pro") == ["iphon", "15", "pro"]


def test_distinct_in_first_appearance_order_and_deterministic() -> None:
    text = "猫猫 cat cats 猫猫"
    assert search_tokens(text) == ["猫", "猫猫", "cat"]
    assert search_tokens(text) == search_tokens(text)


def test_nothing_searchable_gives_no_tokens() -> None:
    assert search_tokens("") == []
    assert search_tokens("?!。，…  ") == []
    assert search_tokens("the of and") == []


def test_caps_on_token_length_and_count() -> None:
    assert search_tokens("a" * 500) == ["a" * MAX_TOKEN_CHARS]
    many = " ".join(f"w{i}x" for i in range(MAX_TOKENS + 50))
    assert len(search_tokens(many)) == MAX_TOKENS


def test_kana_and_hangul_are_paired_like_han() -> None:
    assert "さく" in search_tokens("さくら")
    assert "서울" in search_tokens("서울에서")


def test_a_query_is_tokenised_once_and_alike() -> None:
    """query_tokens is search_tokens of the query (both sides must agree), remembered."""
    for text in ("小宋 周五 考试", "Painting the paints 05", "", "猫 咖啡 cats"):
        assert query_tokens(text) == tuple(search_tokens(text))
    query_tokens.cache_clear()
    first = query_tokens("postgres deploys on Friday")
    assert query_tokens("postgres deploys on Friday") is first
    assert query_tokens.cache_info().hits == 1


def test_a_word_is_stemmed_once_and_the_remembered_stems_are_bounded() -> None:
    stem = _stemmer()
    stem.cache_clear()
    search_tokens("Melanie painted sunsets; painted again")
    search_tokens("painted")
    info = stem.cache_info()
    assert info.misses == 3  # melani, paint(ed), sunset: each word stemmed once
    assert info.hits == 2
    assert info.maxsize == STEM_CACHE_WORDS
    for n in range(STEM_CACHE_WORDS + 10):
        stem(f"word{n}s")
    assert stem.cache_info().currsize == STEM_CACHE_WORDS
    assert search_tokens("painted") == ["paint"]  # a stem pushed out is made again alike
