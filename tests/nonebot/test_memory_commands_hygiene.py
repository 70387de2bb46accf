"""``/memory`` with hostile input: F9 (``list ²``), F10 (``add`` without a cap), NUL,
lone surrogates, SQL metacharacters — a reply every time, nothing stored that a tool
would refuse, and no ERROR traceback in the log.

Before: ``/memory user list ²`` answered «列出记忆失败: invalid literal for int() with
base 10: '²'» with a traceback (``str.isdigit`` accepts ``²``), and ``/memory user add``
stored 100,000 characters that ``write_memory`` caps at 4000.
"""

from __future__ import annotations

import logging
import re

import pytest
from nonebug import App

from tests.nonebot.support import qq_bot, qq_group, qq_private

ADDED = re.compile(r"^✅ 已添加 (👤个人|👥群共享) 记忆: \[([0-9a-f]{32})\]（重要度 5，手动条目）$")
PRIVATE_KEY = "QQPlatform_Private_10001"
GROUP_KEY = "QQPlatform_Group_20002"


def _memory():  # type: ignore[no-untyped-def]
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    return runtime.require()


async def _ctx(app: App, event: object):  # type: ignore[no-untyped-def]
    from amrita_memory_pg.integrations.nonebot.context import tool_context

    async with app.test_api() as api:
        return await tool_context(qq_bot(api), event)  # type: ignore[arg-type]


async def _run(ctx: object, text: str) -> str:
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    reply = await runtime.command().run(ctx, text)  # type: ignore[arg-type]
    return reply.text  # type: ignore[union-attr]


async def _rows() -> list[tuple[str, str]]:
    rows = await _memory().pool.fetch(
        "SELECT partition_key, content FROM amrita_memory.memory ORDER BY created_at, id"
    )
    return [(r["partition_key"], r["content"]) for r in rows]


def _errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_list_with_a_superscript_or_circled_digit_shows_page_one(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    """F9, through the matcher as a user types it."""
    ctx = await _ctx(app, qq_private("x"))
    match = ADDED.match(await _run(ctx, "user add 事实"))
    assert match
    page_one = (
        "📋 👤个人 记忆列表（第 1/1 页，共 1 条）:\n"
        f"[medium] [{match.group(2)}] 事实 | tag: - | 重要度 5 | 手动"
    )
    caplog.set_level(logging.DEBUG)
    async with app.test_matcher() as matcher:
        bot = qq_bot(matcher)
        for text in ("/memory user list ²", "/memory user list ①", "/memory list ٣"):
            event = qq_private(text)
            matcher.receive_event(bot, event)
            matcher.should_call_send(event, page_one, result=None)
    assert _errors(caplog) == []


async def test_list_with_a_page_number_of_thousands_of_digits_is_the_last_page(app: App) -> None:
    ctx = await _ctx(app, qq_private("x"))
    for i in range(11):
        assert ADDED.match(await _run(ctx, f"user add 事实{i}"))
    last = await _run(ctx, "user list " + "9" * 5000)
    assert last.split("\n")[0] == "📋 👤个人 记忆列表（第 2/2 页，共 11 条）:"


async def test_add_is_capped_like_write_memory(app: App, caplog: pytest.LogCaptureFixture) -> None:
    """F10: 4000 characters are stored, 4001 or 100,000 are refused and store nothing."""
    caplog.set_level(logging.DEBUG)
    member = await _ctx(app, qq_group("x", role="member"))
    assert await _run(member, "user add " + "长" * 4001) == (
        "记忆内容过长（4001 字符，上限 4000），请精简后重试"
    )
    assert await _run(member, "group add " + "x" * 100_000) == (
        "记忆内容过长（100000 字符，上限 4000），请精简后重试"
    )
    assert await _rows() == []
    assert ADDED.match(await _run(member, "group add " + "长" * 4000))
    assert await _rows() == [(GROUP_KEY, "长" * 4000)]
    assert _errors(caplog) == []


async def test_add_through_the_matcher_refuses_an_oversize_entry(app: App) -> None:
    async with app.test_matcher() as matcher:
        bot = qq_bot(matcher)
        event = qq_group("/memory group add " + "x" * 4001)
        matcher.receive_event(bot, event)
        matcher.should_call_send(
            event, "记忆内容过长（4001 字符，上限 4000），请精简后重试", result=None
        )
    assert await _rows() == []


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ("user add 我喜欢\x00猫", "记忆内容含有 NUL 字符"),
        ("group add \ud800", "记忆内容含有孤立的代理字符 U+D800"),
        ("user search 猫\x00", "搜索关键词含有 NUL 字符"),
        ("group search \udfff", "搜索关键词含有孤立的代理字符 U+DFFF"),
        ("user delete \x00", "记忆 ID含有 NUL 字符"),
        ("user delete " + "a" * 65, "记忆 ID过长（65 字符，上限 64）"),
        ("search " + "猫" * 1001, "搜索关键词过长（1001 字符，上限 1000）"),
    ],
)
async def test_unstorable_text_is_refused_with_a_plain_sentence(
    app: App, caplog: pytest.LogCaptureFixture, text: str, reply: str
) -> None:
    caplog.set_level(logging.DEBUG)
    admin = await _ctx(app, qq_group("x", role="admin"))
    answer = await _run(admin, text)
    assert answer.startswith(reply), answer
    assert "invalid byte sequence" not in answer and "失败" not in answer
    assert await _rows() == []
    assert _errors(caplog) == []


HOSTILE = [
    "",
    "   ",
    "\x00",
    "user \x00 list",
    "user list -1",
    "user list 0",
    "user list 1e9",
    "user list 99999999999999999999999999",
    "group list ²",
    "user list ²",
    "user delete \x00",
    "USER LIST",
    "user LIST",
    "group add '; DROP TABLE amrita_memory.memory; --",
    "user search %s $1 \\ ' \"",
    "user search 😀👍🏽",
    "user delete ' OR '1'='1",
    "user delete %",
    "user delete _",
    "memo",
    "dmn",
    "group delete \ud800",
    "user add \u202e反转文本",
    "user\u3000add 全角空格",
]


async def test_hostile_command_texts_always_get_a_reply_and_no_traceback(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    """A smaller, hand-picked set through the plugin (the parser is fuzzed in tests/unit)."""
    caplog.set_level(logging.DEBUG)
    member = await _ctx(app, qq_group("x", role="member"))
    kept = await _run(member, "user add 保留的记忆")
    assert ADDED.match(kept)
    for text in HOSTILE:
        reply = await _run(member, text)
        assert reply and isinstance(reply, str), text
        reply.encode("utf-8")
    contents = [content for _key, content in await _rows()]
    assert "保留的记忆" in contents  # "%" and "_" are not LIKE wildcards: nothing was deleted
    assert all("\x00" not in c for c in contents)
    assert _errors(caplog) == []


async def test_a_chat_line_with_nul_or_a_surrogate_is_still_logged_and_counted(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    """The chat-log hook records what it cannot refuse: the bad character becomes U+FFFD."""
    caplog.set_level(logging.DEBUG)
    async with app.test_matcher() as matcher:
        bot = qq_bot(matcher)
        matcher.receive_event(bot, qq_group("冷\x00了\ud800", user_id=10001))
    memory = _memory()
    lines = await memory.activity.recent(GROUP_KEY)
    assert [line.text for line in lines] == ["冷\ufffd了\ufffd"]
    assert sum(map(sum, await memory.activity.heatmap(PRIVATE_KEY))) == 1
    assert _errors(caplog) == []
