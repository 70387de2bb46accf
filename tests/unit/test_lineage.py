"""The pure side of lineage (domain/lineage.py): how a memo splits into sentences, how a
derived text's sources are inferred, when a chat line restates a fact, the confirmation
codes, and the cascade in words."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from amrita_memory_pg.domain.lineage import (
    Candidate,
    Cascade,
    CascadeRow,
    Derivation,
    Ref,
    confirm,
    describe_cascade,
    distinctive_tokens,
    inferred_sources,
    memo_sentences,
    memory_ref,
    restates,
    text_id,
)

FACT = memory_ref("P", "fact")
CAT = memory_ref("P", "cat")
HIKE = memory_ref("P", "hike")
MEMORIES = [
    Candidate(FACT, "用户对花生过敏"),
    Candidate(CAT, "用户喜欢猫"),
    Candidate(HIKE, "用户周六去爬山"),
]


@given(st.text(alphabet="ab。！？!?\n 猫", max_size=40))
def test_a_memos_sentences_put_together_are_the_memo(text: str) -> None:
    parts = memo_sentences(text)
    assert "".join(parts) == text
    assert all(parts)


def test_a_sentence_ends_at_its_mark_and_keeps_its_line_break() -> None:
    assert memo_sentences("喜欢猫。对花生过敏！\n周六爬山") == [
        "喜欢猫。",
        "对花生过敏！\n",
        "周六爬山",
    ]
    assert memo_sentences("a\n\nb?") == ["a\n\n", "b?"]


def test_a_text_id_is_the_md5_of_the_trimmed_text() -> None:
    assert text_id(" 对花生过敏。\n") == hashlib.md5("对花生过敏。".encode()).hexdigest()


def test_generic_words_single_characters_and_short_numbers_are_not_distinctive() -> None:
    words = distinctive_tokens("用户喜欢猫 5 2024")
    assert "用户" not in words and "喜欢" not in words and "猫" not in words
    assert "5" not in words and "2024" in words


def test_a_derived_text_is_made_from_the_memories_it_shares_a_word_with() -> None:
    assert inferred_sources("对花生过敏，周六爬山", MEMORIES) == (FACT, HIKE)
    assert inferred_sources("不能吃花生", MEMORIES) == (FACT,)


def test_a_text_that_shares_no_word_is_made_from_every_memory_a_line_never() -> None:
    line = Candidate(Ref("chat_line", "P", "7"), "今天天气不错")
    assert inferred_sources("allergic to nuts", [*MEMORIES, line]) == (FACT, CAT, HIKE)
    assert inferred_sources("allergic to nuts", [line], fallback=False) == ()


def test_a_derivation_never_names_the_row_it_writes_and_infers_only_when_asked() -> None:
    loop = Derivation("l3", 3, partition_key="P")
    assert loop.sources("用户对花生过敏", MEMORIES) == (FACT,)
    # the row being written is not its own source: nothing else shares a word, so every
    # other memory is (the rule errs towards more sources)
    assert loop.sources("用户对花生过敏", MEMORIES, exclude=FACT) == (CAT, HIKE)
    exact = Derivation("l3", 3, fixed=(HIKE,), infer=False)
    assert exact.sources("用户对花生过敏", MEMORIES) == (HIKE,)


def test_a_chat_line_restates_a_fact_when_it_holds_half_the_shorter_ones_words() -> None:
    assert restates("忘掉我对花生过敏这件事", "用户对花生过敏")
    assert restates("忘掉我对花生过敏这件事", "用户对花生过敏，吃了会起疹子，上次还去了医院")
    assert not restates("我想吃花生", "用户对花生过敏")
    assert not restates("我想吃花生酱，也想吃花生米", "用户对花生过敏")
    assert not restates("", "用户对花生过敏")


def test_a_confirmation_code_holds_ten_minutes_and_only_for_what_was_shown() -> None:
    now = datetime(2026, 12, 6, 8, 0, tzinfo=UTC)
    shown = confirm("forget|P|fact", "digest-1", Cascade(()), now)
    assert shown.accepts(shown.code, now + timedelta(minutes=9))
    assert shown.accepts(shown.code.upper(), now)
    assert not shown.accepts(shown.code, now + timedelta(minutes=21))
    changed = confirm("forget|P|fact", "digest-2", Cascade(()), now)
    assert not changed.accepts(shown.code, now)


def test_the_cascade_in_words_says_what_happens_to_each_row() -> None:
    cascade = Cascade(
        (
            CascadeRow("forget", "memory", "P", "fact", "用户对花生过敏"),
            CascadeRow("chat_line", "chat_line", "P", "7", "我对花生过敏"),
            CascadeRow("delete", "profile_line", "P", "x", "对花生过敏"),
            CascadeRow("withhold", "profile_summary", "P", "y", "爱爬山，对花生过敏"),
            CascadeRow("rows", "memory", None, None, None, 1),
        )
    )
    words = describe_cascade(cascade)
    assert words[0] == "忘记记忆「用户对花生过敏」"
    assert "删除说过它的 1 条聊天记录" in words
    assert "删除（只由它得来）画像行「对花生过敏」" in words
    assert any(w.startswith("暂停使用并交给整理循环重写") and "画像摘要" in w for w in words)
    assert cascade.counts == {"memory": 1}
    assert [r.id for r in cascade.chat_lines] == ["7"]
