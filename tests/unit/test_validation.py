"""The input checks every surface shares (domain/validation.py): what is refused, what passes.

NUL and lone surrogates used to reach asyncpg (``invalid byte sequence for encoding
"UTF8": 0x00``), integers past int64 too (``value out of int64 range``), and
``str.isdigit`` let ``²`` through to ``int()`` (F9). These pin the refusals and, with
hypothesis, that the checks never fail in any other way.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amrita_memory_pg.domain.validation import (
    INT64_MAX,
    INT64_MIN,
    MAX_CONTENT_CHARS,
    InvalidInput,
    check_text,
    clamp,
    echo,
    parse_count,
    parse_int,
    plain,
    scrub,
    text_problem,
)

#: every code point, lone surrogates included (hypothesis leaves them out by default)
any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
any_text = st.text(any_char, max_size=60)


def storable(text: str) -> bool:
    """What PostgreSQL accepts as text: valid UTF-8 without NUL."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


@pytest.mark.parametrize(
    "text",
    ["我喜欢猫 😀👍🏽", "'; DROP TABLE amrita_memory.memory; --", "$1 %s \\x00 {}", "", "\t\n"],
)
def test_ordinary_text_emoji_and_sql_metacharacters_pass_unchanged(text: str) -> None:
    assert check_text(text, max_chars=MAX_CONTENT_CHARS) == text


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a\x00b", "NUL 字符（\\x00）"),
        ("a\ud800b", "孤立的代理字符 U+D800"),
        ("\udfff", "U+DFFF"),
        ("😀\ud83d", "U+D83D"),
    ],
)
def test_nul_and_lone_surrogates_are_refused_with_a_plain_reason(text: str, fragment: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_text(text)
    assert fragment in caught.value.reason
    assert "\n" not in caught.value.reason
    assert storable(caught.value.reason)  # the refusal itself can be sent anywhere


def test_length_is_checked_in_characters_with_both_numbers() -> None:
    assert check_text("长" * 4000, max_chars=4000) == "长" * 4000
    with pytest.raises(InvalidInput) as caught:
        check_text("长" * 4001, max_chars=4000)
    assert caught.value.reason == "过长（4001 字符，上限 4000），请精简后重试"


@given(any_text)
def test_text_problem_is_none_exactly_for_storable_text(text: str) -> None:
    assert (text_problem(text) is None) == storable(text)


@pytest.mark.parametrize(
    ("value", "number"),
    [(5, 5), (-3, -3), (5.0, 5), (" 7 ", 7), ("+5", 5), ("-0", 0), ("007", 7)],
)
def test_whole_numbers_in_any_plain_spelling_parse(value: object, number: int) -> None:
    assert parse_int(value) == number


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (True, "应为整数，收到布尔值"),
        ("²", "应为整数"),
        ("①", "应为整数"),
        ("٣", "应为整数"),  # int("٣") == 3 in Python; not a number we take
        ("5.5", "应为整数"),
        (2.5, "应为整数"),
        (math.nan, "应为整数"),
        (math.inf, "应为整数"),
        ([1], "应为整数"),
        (None, "应为整数"),
        (INT64_MAX + 1, "超出 64 位整数范围"),
        (INT64_MIN - 1, "超出 64 位整数范围"),
        (1e30, "超出 64 位整数范围"),
        # int() itself refuses over 4300 digits, and repr() of such an int raises
        pytest.param("9" * 5000, "超出 64 位整数范围", id="5000-digit-text"),
        pytest.param(10**5000, "超出 64 位整数范围", id="5000-digit-int"),
    ],
)
def test_non_integers_and_numbers_past_int64_are_refused(value: object, fragment: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_int(value)
    assert fragment in caught.value.reason
    assert len(caught.value.reason) < 200


def test_int64_bounds_themselves_are_accepted() -> None:
    assert parse_int(INT64_MAX) == INT64_MAX
    assert parse_int(str(INT64_MIN)) == INT64_MIN
    assert parse_int("0" * 40 + "1") == 1  # leading zeros are not magnitude


hostile = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),
    st.booleans(),
    st.none(),
    any_text,
    st.from_regex(r"\A[+-]?[0-9]{1,40}\Z"),
    st.lists(st.integers(), max_size=3),
)


@given(hostile)
def test_parse_int_returns_an_int64_or_refuses_and_nothing_else(value: object) -> None:
    try:
        number: int | None = parse_int(value)
    except InvalidInput as exc:
        number, reason = None, exc.reason
    if number is None:
        assert reason and storable(reason)
    else:
        assert type(number) is int and INT64_MIN <= number <= INT64_MAX


@given(st.integers(), st.integers(-100, 100), st.integers(-100, 100))
def test_clamp_lands_in_range(number: int, a: int, b: int) -> None:
    lo, hi = min(a, b), max(a, b)
    assert lo <= clamp(number, lo, hi) <= hi
    assert clamp(number, lo, None) >= lo and clamp(number, None, hi) <= hi


@pytest.mark.parametrize(
    ("text", "page"),
    [
        ("2", 2),
        (" 3 ", 3),
        ("0", 1),
        ("99", 5),
        pytest.param("9" * 5000, 5, id="5000-digits"),
        ("²", None),
        ("①", None),
    ],
)
def test_parse_count_takes_ascii_digits_only_and_clamps(text: str, page: int | None) -> None:
    assert parse_count(text, lo=1, hi=5) == page


@pytest.mark.parametrize("text", ["", "-1", "+2", "1.5", "٣", "1 2", "a"])
def test_parse_count_is_none_for_anything_but_digits(text: str) -> None:
    assert parse_count(text, lo=1, hi=5) is None


@given(any_text)
def test_parse_count_never_raises_and_stays_in_range(text: str) -> None:
    page = parse_count(text, lo=1, hi=7)
    assert page is None or 1 <= page <= 7


@given(st.one_of(any_text, st.integers(), st.floats(), st.lists(any_text, max_size=3)))
def test_echo_is_short_and_sendable(value: object) -> None:
    shown = echo(value)
    assert len(shown) <= 41 and storable(shown)


def test_echo_describes_what_has_no_repr_and_plain_keeps_clean_names() -> None:
    nested: list[object] = []
    for _ in range(100_000):
        nested = [nested]
    assert echo(nested) == "<无法显示的 list>"
    assert echo(10**5000).endswith("位二进制的整数>")
    assert plain("mood") == "mood"
    assert plain("a\x00") == "'a\\x00'"


@given(any_text)
def test_scrub_makes_any_text_storable_and_keeps_storable_text(text: str) -> None:
    cleaned = scrub(text)
    assert storable(cleaned) and len(cleaned) == len(text)
    if storable(text):
        assert cleaned == text


def test_scrub_marks_where_the_character_was() -> None:
    assert scrub("冷\x00了\ud800") == "冷\ufffd了\ufffd"
