"""Every refusal of the one validation exists in both languages: Chinese for the chat
surfaces (as the reference answered), English for a person reading the CLI or the page in
English. A refusal raised without its English would read Chinese on an English screen."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from amrita_memory_pg.domain import validation as v
from amrita_memory_pg.domain.keys import check_partition_key

HAN = re.compile(r"[\u4e00-\u9fff]")

REFUSED: list[tuple[str, Callable[[], object]]] = [
    ("too long", lambda: v.check_text("x" * 11, max_chars=10)),
    ("NUL", lambda: v.check_text("a\x00b")),
    ("surrogate", lambda: v.check_text("a\ud800b")),
    ("too many lines", lambda: v.check_lines(["a", "b"], max_line_chars=5, max_lines=1)),
    ("a line too long", lambda: v.check_lines(["ok", "toolong"], max_line_chars=5, max_lines=9)),
    ("boolean", lambda: v.parse_int(True)),
    ("not an integer", lambda: v.parse_int("five")),
    ("past int64 (digits)", lambda: v.parse_int("9" * 30)),
    ("past int64 (value)", lambda: v.parse_int(2**63)),
    ("empty title", lambda: v.check_knowledge_title("  ")),
    ("two-line title", lambda: v.check_knowledge_title("a\nb")),
    ("empty summary", lambda: v.check_knowledge_summary(" ")),
    ("separator in summary", lambda: v.check_knowledge_summary("a\n---\nb")),
    ("knowledge id", lambda: v.check_kid("xyz")),
    ("category", lambda: v.parse_category("mood")),
    ("importance", lambda: v.parse_importance(11)),
    ("key too long", lambda: check_partition_key("x" * 300)),
    ("key with NUL", lambda: check_partition_key("a\x00")),
    ("not a key", lambda: check_partition_key("qq:private:1")),
]


@pytest.mark.parametrize(("case", "call"), REFUSED, ids=[case for case, _ in REFUSED])
def test_each_refusal_reads_in_chinese_and_in_english(
    case: str, call: Callable[[], object]
) -> None:
    with pytest.raises(v.InvalidInput) as caught:
        call()
    refused = caught.value
    assert HAN.search(refused.said("zh")), (case, refused.reason)
    assert refused.said("zh") == refused.reason == str(refused)
    english = refused.said("en")
    assert refused.en is not None and english == refused.en, case
    assert not HAN.search(english), (case, english)


def test_the_line_and_the_key_name_what_they_wrap() -> None:
    with pytest.raises(v.InvalidInput) as caught:
        v.check_lines(["ok", "toolong"], max_line_chars=5, max_lines=9)
    assert (
        caught.value.en == "line 1 is too long (7 characters, at most 5): shorten it and try again"
    )
    assert caught.value.reason.startswith("第 1 行过长（7 字符，上限 5）")
    with pytest.raises(v.InvalidInput) as caught:
        check_partition_key("QQ_1" + "\x00")
    assert caught.value.en is not None and caught.value.en.startswith(
        "the partition key contains a NUL"
    )


def test_a_refusal_without_its_english_reads_chinese_everywhere() -> None:
    refused = v.InvalidInput("不是记忆编号")
    assert refused.said("en") == refused.said("zh") == "不是记忆编号"
