"""``/memory`` paths that need the L2 store (list, search, delete, add) and the sweep job.

Written against the ``MemoryStore`` contract of ``storage/memories.py``; they pass once
the pgvector implementation is wired into ``Memory.memories`` (the L2 branch). Nothing
here is skipped on purpose: until then they fail with ``NotImplementedError``.
"""

from __future__ import annotations

import re
from pathlib import Path

from nonebug import App

from amrita_memory_pg.domain.decay import SCORE_LEGEND
from tests.nonebot.console_process import ConsoleBotProcess
from tests.nonebot.support import console_bot, console_private, qq_bot, qq_group, qq_private

ADDED = re.compile(r"^✅ 已添加 (👤个人|👥群共享) 记忆: \[([0-9a-f]{32})\]（重要度 5，手动条目）$")


class Matches:
    """Equal to any string the pattern matches (for replies that carry a fresh id)."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(self.pattern.match(other))

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]


def _memory():  # type: ignore[no-untyped-def]
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    return runtime.require()


async def _run(ctx_event: object, text: str) -> str:
    """Run /memory through the command core with the event's context (for ids we need)."""
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    reply = await runtime.command().run(ctx_event, text)  # type: ignore[arg-type]
    return reply.text  # type: ignore[union-attr]


async def _ctx(app: App, event: object):  # type: ignore[no-untyped-def]
    from amrita_memory_pg.integrations.nonebot.context import tool_context

    async with app.test_api() as api:
        return await tool_context(qq_bot(api), event)  # type: ignore[arg-type]


async def test_user_add_stores_a_manual_medium_entry(app: App) -> None:
    ctx = await _ctx(app, qq_private("x"))
    reply = await _run(ctx, "user add 我喜欢猫")
    match = ADDED.match(reply)
    assert match, reply
    record = await _memory().memories.get("QQPlatform_Private_10001", match.group(2))
    assert record is not None
    assert (record.content, record.source, record.importance, record.scope) == (
        "我喜欢猫",
        "user",
        5,
        "user",
    )
    assert record.author == "10001"


async def test_list_shows_pages_and_marks_manual_entries(app: App) -> None:
    ctx = await _ctx(app, qq_private("x"))
    ids = []
    for i in range(11):
        reply = await _run(ctx, f"user add 事实{i}")
        match = ADDED.match(reply)
        assert match, reply
        ids.append(match.group(2))
    page1 = await _run(ctx, "user list")
    lines = page1.split("\n")
    assert lines[0] == "📋 👤个人 记忆列表（第 1/2 页，共 11 条）:"
    assert lines[1] == f"[medium] [{ids[0]}] 事实0 | tag: - | 重要度 5 | 手动"
    assert lines[-1] == "下一页: /memory user list 2"
    page2 = await _run(ctx, "list 2")
    assert page2.split("\n")[0] == "📋 👤个人 记忆列表（第 2/2 页，共 11 条）:"
    assert page2.split("\n")[1] == f"[medium] [{ids[10]}] 事实10 | tag: - | 重要度 5 | 手动"
    assert await _run(ctx, "user list 99") == page2


async def test_search_shows_distance_and_decay_score(app: App) -> None:
    ctx = await _ctx(app, qq_private("x"))
    assert ADDED.match(await _run(ctx, "user add 我喜欢猫"))
    reply = await _run(ctx, "user search 猫")
    header, first, *_ = reply.split("\n")
    assert header == "🔍 👤个人 搜索「猫」结果（距离越小越相似）:"
    assert re.match(
        r"^\[medium\] \[[0-9a-f]{32}\] 我喜欢猫 \| tag: - \| 重要度 5 \| 手动 \| 距离: \d+\.\d{4} \| 衰减分: \d+\.\d{4}$",
        first,
    )


async def test_search_decay_score_is_never_normalised_to_zero(app: App) -> None:
    """Two fresh memories both score similarity × decay (not the hybrid
    fusion min-max normalised over the rows, which put the last one at 0.0000); the
    legend says what the number is."""
    ctx = await _ctx(app, qq_private("x"))
    assert ADDED.match(await _run(ctx, "user add 我最喜欢的水果是芒果"))
    assert ADDED.match(await _run(ctx, "user add 水果店周日不开门"))
    lines = (await _run(ctx, "user search 水果")).split("\n")
    assert lines[-1] == SCORE_LEGEND
    scores = [float(m) for m in re.findall(r"衰减分: (\d+\.\d{4})$", "\n".join(lines[1:-1]), re.M)]
    assert len(scores) == 2 and all(score > 0.3 for score in scores)


async def test_search_takes_a_mode(app: App) -> None:
    """``search mode=keyword|vector|hybrid <关键词>``; keyword mode has no distance."""
    ctx = await _ctx(app, qq_private("x"))
    assert ADDED.match(await _run(ctx, "user add 阿杰的新号码尾号 2046"))
    assert ADDED.match(await _run(ctx, "user add 我喜欢猫"))
    keyword = await _run(ctx, "user search mode=keyword 2046")
    header, first, *rest = keyword.split("\n")
    assert header == "🔍 👤个人 搜索「2046」结果（距离越小越相似）:"
    assert "阿杰的新号码尾号 2046" in first and "距离: - |" in first and rest == [SCORE_LEGEND]
    vector = await _run(ctx, "user search mode=vector 猫")
    assert re.search(r"距离: \d+\.\d{4}", vector.split("\n")[1])
    refused = await _run(ctx, "user search mode=fuzzy 猫")
    assert refused.startswith("未知的检索方式 'fuzzy'")


async def test_delete_by_prefix_and_not_found(app: App) -> None:
    ctx = await _ctx(app, qq_private("x"))
    match = ADDED.match(await _run(ctx, "user add 临时记忆"))
    assert match
    memory_id = match.group(2)
    assert await _run(ctx, "user delete ffffffffffff") == (
        "👤个人 未找到匹配的记忆: ffffffffffff\n提示: 使用 /memory user list 查看全部 ID"
    )
    assert await _run(ctx, f"delete {memory_id[:8]}") == f"✅ 已删除 👤个人 记忆: [{memory_id}]"
    assert await _run(ctx, "user list") == "👤个人 暂无记忆"


async def test_group_add_by_a_member_and_delete_by_an_admin(app: App) -> None:
    member = await _ctx(app, qq_group("x", role="member"))
    admin = await _ctx(app, qq_group("x", user_id=10009, role="admin"))
    match = ADDED.match(await _run(member, "group add 本群每周五读书"))
    assert match
    assert match.group(1) == "👥群共享"
    memory_id = match.group(2)
    assert await _run(member, f"group delete {memory_id}") == (
        "❌ 无权删除👥群共享记忆，仅管理员和群主可删除"
    )
    assert (
        await _run(admin, f"group delete {memory_id}") == f"✅ 已删除 👥群共享 记忆: [{memory_id}]"
    )


async def test_console_user_add_then_list_through_nonebug(app: App) -> None:
    async with app.test_matcher() as ctx:
        bot = console_bot(ctx)
        event = console_private("/memory user add 我喜欢猫")
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, Matches(ADDED), result=None)  # type: ignore[arg-type]
    records, total = await _memory().memories.list_page("ConsolePlatform_Private_user", limit=10)
    assert total == 1
    assert records[0].content == "我喜欢猫"


async def test_sweep_job_runs_the_store_sweep(app: App) -> None:
    from amrita_memory_pg.integrations.nonebot.jobs import run_sweep

    report = await run_sweep(_memory().memories.sweep)
    assert report is not None
    assert report.scanned >= 0


async def test_console_bot_process_add_then_search(db_dsn: str, tmp_path: Path) -> None:
    bot = ConsoleBotProcess(cwd=tmp_path, env={"DATABASE_URL": db_dsn, "EMBEDDING_PROCTOL": "hash"})
    try:
        bot.wait_for("Send Message", timeout=90)
        bot.pump(2)
        bot.focus_input()
        bot.type_line("/memory user add 我喜欢猫")
        bot.wait_for("已添加")
        bot.type_line("/memory user search 猫")
        screen = bot.wait_for("衰减分")
        assert "距离" in screen
    finally:
        bot.stop()
