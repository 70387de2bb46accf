"""The pure parts of the second seed's model: the block's budget and order, the options of
``/memory``, the extraction answer's validation, the clear confirmation token, the token
counter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amrita_memory_pg.commands.memory_command import parse_options
from amrita_memory_pg.domain.injection import (
    Candidate,
    recency_score,
    render_bot_memories,
    select,
)
from amrita_memory_pg.domain.keys import scope_of_key
from amrita_memory_pg.domain.records import CATEGORY_NAMES
from amrita_memory_pg.domain.validation import InvalidInput
from amrita_memory_pg.llm.tokens import estimate_tokens, token_counter, tokenizer_name
from amrita_memory_pg.maintenance.clear import ClearPlan, confirmation_token
from amrita_memory_pg.services.extraction import Rejected, parse_answer
from amrita_memory_pg.settings import ExtractionSettings

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
LABELS = {"global": "全局", "me": "个人"}


def cand(
    i: int, importance: int, days_old: float, key: str = "me", text: str | None = None
) -> Candidate:
    return Candidate(
        id=f"{i:032x}",
        partition_key=key,
        content=text or f"记忆{i:02d}",
        importance=importance,
        category=None,
        updated_epoch=(NOW - timedelta(days=days_old)).timestamp(),
    )


def one_token_per_line(_line: str) -> int:
    return 10


def pick(cands: list[Candidate], budget: int, **kw: object) -> list[str]:
    chosen = select(
        cands,
        budget=budget,
        count=one_token_per_line,
        now=NOW,
        half_life_days=30,
        scope_labels=LABELS,
        category_names=CATEGORY_NAMES,
        **kw,  # type: ignore[arg-type]
    )
    return chosen.lines


def test_everything_that_fits_is_shown_by_importance_then_most_recent_update() -> None:
    cands = [cand(1, 5, 10), cand(2, 8, 40), cand(3, 5, 1), cand(4, 8, 2)]
    assert pick(cands, 1000) == [
        "- [个人][8] 记忆04",
        "- [个人][8] 记忆02",
        "- [个人][5] 记忆03",
        "- [个人][5] 记忆01",
    ]


def test_over_budget_the_lowest_recency_decay_scores_are_evicted() -> None:
    # scores: 8 x 0.5^(120/30) = 0.5, 2 x 0.5^(0/30) = 2, 5 x 0.5^(30/30) = 2.5, 9 fresh = 9
    cands = [cand(1, 8, 120), cand(2, 2, 0), cand(3, 5, 30), cand(4, 9, 0)]
    assert pick(cands, 30) == ["- [个人][9] 记忆04", "- [个人][5] 记忆03", "- [个人][2] 记忆02"]
    assert pick(cands, 20) == ["- [个人][9] 记忆04", "- [个人][5] 记忆03"]
    assert pick(cands, 9) == []


def test_a_long_line_that_does_not_fit_leaves_room_for_shorter_ones() -> None:
    long = cand(1, 10, 0, text="长" * 400)
    short = [cand(2, 3, 0), cand(3, 3, 0)]
    chosen = select(
        [long, *short],
        budget=30,
        count=estimate_tokens,
        now=NOW,
        half_life_days=30,
        scope_labels=LABELS,
        category_names=CATEGORY_NAMES,
    )
    assert chosen.lines == ["- [个人][3] 记忆02", "- [个人][3] 记忆03"] and chosen.evicted == 1


def test_relevant_memories_come_first_and_are_not_shown_twice() -> None:
    a, b = cand(1, 9, 0), cand(2, 1, 300)
    chosen = select(
        [a, b],
        budget=10,
        count=one_token_per_line,
        now=NOW,
        half_life_days=30,
        scope_labels=LABELS,
        category_names=CATEGORY_NAMES,
        relevant=[b],
    )
    assert chosen.relevant_lines == ["- [个人][1] 记忆02"] and chosen.lines == []
    text = render_bot_memories(chosen, ["QQPlatform_Group_1"])
    assert text.splitlines()[0] == "## Bot Memories" and "### 与当前消息相关" in text
    assert text.endswith("QQPlatform_Group_1")


@given(
    st.lists(st.tuples(st.integers(1, 10), st.floats(0, 2000)), max_size=40),
    st.integers(0, 400),
)
def test_the_selection_never_exceeds_the_budget_and_keeps_the_order(
    specs: list[tuple[int, float]], budget: int
) -> None:
    cands = [cand(i, imp, age) for i, (imp, age) in enumerate(specs)]
    chosen = select(
        cands,
        budget=budget,
        count=estimate_tokens,
        now=NOW,
        half_life_days=30,
        scope_labels=LABELS,
        category_names=CATEGORY_NAMES,
    )
    assert chosen.tokens <= budget
    assert sum(estimate_tokens(line) for line in chosen.lines) == chosen.tokens
    shown = [int(line.split("][")[1].split("]")[0]) for line in chosen.lines]
    assert shown == sorted(shown, reverse=True)
    assert len(chosen.lines) + chosen.evicted == len(cands)


def test_recency_score_halves_per_half_life() -> None:
    assert recency_score(8, 0, 30) == 8
    assert recency_score(8, 30, 30) == pytest.approx(4)
    assert recency_score(8, -5, 30) == 8


def test_the_token_counter_is_cl100k_offline() -> None:
    count = token_counter()
    assert tokenizer_name().startswith("cl100k_base")
    assert count("hello world") == 2  # cl100k: "hello", " world"
    assert estimate_tokens("用户偏好abcd") == 5


@pytest.mark.parametrize(
    ("text", "anywhere", "expected"),
    [
        ("-c rule -i 8 部署前 -c 先测试", False, ("rule", 8, "部署前 -c 先测试")),
        ("--category=偏好 喜欢猫", False, ("preference", None, "喜欢猫")),
        ("类别=知识 重要度=3  两个  空格", False, ("knowledge", 3, "两个  空格")),
        ("2 -c event", True, ("event", None, "2")),
        ("喜欢 -c rule", False, (None, None, "喜欢 -c rule")),
        ("-c", False, (None, None, "-c")),
    ],
)
def test_command_options(text: str, anywhere: bool, expected: tuple[object, ...]) -> None:
    options = parse_options(text, anywhere=anywhere)
    assert (options.category, options.importance, options.rest) == expected


def test_command_options_refuse_unknown_categories_and_levels() -> None:
    with pytest.raises(InvalidInput, match="类别"):
        parse_options("-c mood x")
    with pytest.raises(InvalidInput, match="重要度"):
        parse_options("-i 0 x")


def test_extraction_answers() -> None:
    limits = ExtractionSettings(max_entries=2, max_entry_chars=20, max_output_chars=300)
    ok = parse_answer('[{"category": "rule", "content": "先测试", "importance": 7}]', limits)
    assert [(e.category, e.content, e.importance) for e in ok] == [("rule", "先测试", 7)]
    for bad in ('{"memories": null}', "[1]", "x" * 301, '{"memories": [], "extra": 1}'):
        with pytest.raises(Rejected):
            parse_answer(bad, limits)


def test_clear_tokens_depend_on_the_contents_and_expire() -> None:
    token = confirmation_token("k", 3, "abc", NOW)
    plan = ClearPlan("k", 3, token, "abc")
    assert plan.accepts(token.upper(), NOW + timedelta(minutes=5))
    assert not plan.accepts(token, NOW + timedelta(minutes=25))
    assert confirmation_token("k", 3, "abd", NOW) != token
    assert confirmation_token("k2", 3, "abc", NOW) != token


def test_scope_of_a_key() -> None:
    assert scope_of_key("global") == "global"
    assert scope_of_key("QQPlatform_Group_1") == "group"
    assert scope_of_key("QQPlatform_Private_1") == "user"
