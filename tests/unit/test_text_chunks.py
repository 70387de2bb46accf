"""Memo chunking for ``/memory memo``: whole lines, sentence cuts, ≤ 600 characters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from amrita_memory_pg.domain.text import pack_chunks, split_sentences


def test_short_memo_is_one_chunk_without_trailing_newline() -> None:
    assert pack_chunks("喜欢猫\n住在杭州\n") == ["喜欢猫\n住在杭州"]


def test_lines_are_packed_greedily_and_never_split_when_they_fit() -> None:
    lines = ["a" * 250, "b" * 250, "c" * 250]
    assert pack_chunks("\n".join(lines), 600) == ["a" * 250 + "\n" + "b" * 250, "c" * 250]


def test_a_long_line_is_cut_at_sentence_ends() -> None:
    sentence = "猫" * 299 + "。"
    chunks = pack_chunks(sentence * 3, 600)
    assert chunks == [sentence * 2, sentence]


def test_a_sentence_longer_than_the_limit_is_hard_cut() -> None:
    assert split_sentences("x" * 1300, 600) == ["x" * 600, "x" * 600, "x" * 100]


def test_whitespace_only_content_is_returned_as_is() -> None:
    assert pack_chunks("  \n \n") == ["  \n \n"]


@given(st.text(alphabet="猫a。\n ", min_size=1, max_size=3000), st.integers(10, 700))
def test_chunks_respect_the_limit_and_keep_every_visible_character(text: str, limit: int) -> None:
    chunks = pack_chunks(text, limit)
    assert all(len(chunk) <= limit for chunk in chunks) or chunks == [text]
    assert "".join(chunks).replace("\n", "").replace(" ", "") == text.replace("\n", "").replace(
        " ", ""
    )
