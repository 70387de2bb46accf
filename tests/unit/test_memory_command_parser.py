"""The ``/memory`` text parser and its input checks, as pure functions (no bot, no database).

The plugin-level behaviour (replies, what is stored) is in
tests/nonebot/test_memory_commands*.py; here the parser is pinned on the reference's
examples and fuzzed: any text gives a known kind, the group scope only in a group, and
an argument that passes :func:`refusal` is one the database can store within the cap.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amrita_memory_pg.commands.memory_command import (
    Parsed,
    page_number,
    parse_command,
    refusal,
)
from amrita_memory_pg.domain.validation import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_QUERY_CHARS,
    text_problem,
)


@pytest.mark.parametrize(
    ("text", "in_group", "parsed"),
    [
        ("", False, Parsed("usage")),
        ("memo", True, Parsed("memo", sub="memo")),
        ("备忘录", False, Parsed("memo", sub="备忘录")),
        ("DMN", False, Parsed("dmn", sub="dmn")),
        ("user", False, Parsed("action", sub="user", scope="user")),
        ("user list 2", False, Parsed("action", sub="user", scope="user", action="list", args="2")),
        ("USER add  我 喜欢 猫 ", False, Parsed("action", "user", "user", "add", "我 喜欢 猫")),
        ("group list", True, Parsed("action", sub="group", scope="group", action="list")),
        ("group list", False, Parsed("usage", sub="group")),
        (
            "search 猫",
            False,
            Parsed("action", sub="search", scope="user", action="search", args="猫"),
        ),
        ("user LIST", False, Parsed("action", sub="user", scope="user", action="LIST")),
        ("frobnicate", True, Parsed("usage", sub="frobnicate")),
    ],
)
def test_parse_follows_the_reference(text: str, in_group: bool, parsed: Parsed) -> None:
    assert parse_command(text, in_group=in_group) == parsed


@pytest.mark.parametrize(
    ("action", "args", "reply"),
    [
        ("add", "长" * 4000, None),
        ("add", "长" * 4001, "记忆内容过长（4001 字符，上限 4000），请精简后重试"),
        ("search", "猫" * 1001, "搜索关键词过长（1001 字符，上限 1000），请精简后重试"),
        ("delete", "a" * 65, "记忆 ID过长（65 字符，上限 64），请精简后重试"),
        ("add", "x\x00", "记忆内容含有 NUL 字符（\\x00），数据库无法保存，请删除该字符后重试"),
        ("list", "\x00", None),  # a page that is not a number is page 1, not a refusal
        ("add", "", None),  # empty is the handlers' own hint
    ],
)
def test_refusal_uses_the_tools_caps(action: str, args: str, reply: str | None) -> None:
    assert refusal(action, args) == reply


@pytest.mark.parametrize(
    ("args", "page"),
    [("", 1), ("2", 2), ("²", 1), ("①", 1), ("٣", 1), ("-2", 1), ("0", 1), ("7", 3)],
)
def test_page_numbers_are_ascii_digits_clamped_to_the_pages(args: str, page: int) -> None:
    assert page_number(args, pages=3) == page


any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
words = st.sampled_from(
    [
        "user",
        "group",
        "global",
        "USER",
        "KNOWLEDGE",
        "profile",
        "pause",
        "list",
        "search",
        "delete",
        "add",
        "memo",
        "dmn",
        "触发",
        "²",
        "\x00",
    ]
)
command_texts = st.one_of(
    st.text(any_char, max_size=80),
    st.lists(st.one_of(words, st.text(any_char, max_size=8)), max_size=5).map(" ".join),
    st.tuples(words, words, st.sampled_from(["x" * 5000, "\ud800", "'; DROP TABLE x; --"])).map(
        " ".join
    ),
)
CAPS = {"add": MAX_CONTENT_CHARS, "search": MAX_QUERY_CHARS, "delete": MAX_ID_CHARS}


@given(command_texts, st.booleans())
def test_any_text_parses_to_a_known_kind_and_clean_arguments(text: str, in_group: bool) -> None:
    parsed = parse_command(text, in_group=in_group)
    assert parsed.kind in (
        "memo",
        "dmn",
        "extract",
        "usage",
        "action",
        "profile",
        "knowledge",
        "pause",
    )
    if parsed.kind != "action":
        return
    # a group scope is only parsed inside a group; user and global are parsed anywhere
    # (who may use global is decided later, by the permission check)
    assert parsed.scope in ("user", "global") or in_group
    assert parsed.args == parsed.args.strip()
    reason = refusal(parsed.action, parsed.args)
    if parsed.action in CAPS and parsed.args and reason is None:
        assert len(parsed.args) <= CAPS[parsed.action]
        assert text_problem(parsed.args) is None
    if reason is not None:
        assert "\n" not in reason and text_problem(reason) is None


@given(st.text(any_char, max_size=30), st.integers(1, 10**6))
def test_page_number_is_always_a_valid_page(args: str, pages: int) -> None:
    assert 1 <= page_number(args, pages) <= pages


def test_the_usage_names_every_short_form_the_parser_still_accepts() -> None:
    """The old short forms keep working (parse_command); a user reads them in the help."""
    from amrita_memory_pg.commands.memory_command import parsing
    from amrita_memory_pg.commands.memory_command.texts import usage
    from amrita_memory_pg.tools.context import ToolContext

    admin = usage(ToolContext(platform="qq", user_id="1", roles=frozenset({"superuser"})))
    member = usage(ToolContext(platform="qq", user_id="1"))
    words = (
        parsing.MEMO_SUBS
        | parsing.PROFILE_SUBS
        | parsing.KNOWLEDGE_SUBS
        | parsing.EXTRACT_SUBS
        | parsing.PAUSE_SUBS
        | parsing.DMN_SUBS
        | set(parsing._OPTION_NAMES)
    )
    assert sorted(w for w in words if w not in admin) == []
    assert "/memory list|search|delete" in member and "/记忆" in member
    # each short form the usage names is one the parser takes as its long form
    for short, long in (("list", "user list"), ("search 猫", "user search 猫")):
        a, b = parse_command(short, in_group=False), parse_command(long, in_group=False)
        assert (a.kind, a.scope, a.action, a.args) == (b.kind, b.scope, b.action, b.args)
