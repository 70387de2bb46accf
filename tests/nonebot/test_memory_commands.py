"""``/memory`` paths that need no L2 store: memo, dmn, usage hints, permission refusals,
argument checks — through nonebug, on OneBot v11 (QQ) and the console adapter."""

from __future__ import annotations

from dataclasses import replace

from nonebug import App

from amrita_memory_pg.commands.memory_command import (
    USAGE_CATEGORIES,
    USAGE_EXTRACT,
    USAGE_GLOBAL,
    USAGE_KNOWLEDGE,
    USAGE_MEMO,
    USAGE_MODES,
    USAGE_PROFILE,
    USAGE_SHORT,
    USAGE_USER,
)
from amrita_memory_pg.commands.memory_command import USAGE_GROUP as USAGE_GROUP_LINES
from amrita_memory_pg.commands.memory_command.memo import EMPTY_MEMO
from tests.nonebot.conftest import SUPERUSER_ID
from tests.nonebot.support import (
    BOT_QQ,
    console_bot,
    console_private,
    console_public,
    qq_bot,
    qq_group,
    qq_private,
)

USAGE_PRIVATE = "\n".join(
    [
        "用法:",
        *USAGE_USER,
        USAGE_GLOBAL,
        USAGE_EXTRACT,
        USAGE_MEMO,
        USAGE_CATEGORIES,
        USAGE_MODES,
        USAGE_PROFILE,
        *USAGE_KNOWLEDGE,
        USAGE_SHORT,
    ]
)
USAGE_GROUP = "\n".join(
    [
        "用法:",
        *USAGE_USER,
        *USAGE_GROUP_LINES,
        USAGE_GLOBAL,
        USAGE_EXTRACT,
        USAGE_MEMO,
        USAGE_CATEGORIES,
        USAGE_MODES,
        USAGE_PROFILE,
        *USAGE_KNOWLEDGE,
        USAGE_SHORT,
    ]
)
# the issue-14 lines are there
assert "/memory user clear" in USAGE_PRIVATE and "-c 类别" in USAGE_PRIVATE
assert "mode=hybrid|vector|keyword" in USAGE_PRIVATE


async def _memo(key: str, text: str) -> None:
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    await runtime.require().memos.replace(key, text)


async def test_usage_hint_in_private_chat_has_only_the_user_scope(app: App) -> None:
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        for text in ("/memory", "/记忆 help", "/memory group list"):
            event = qq_private(text)
            ctx.receive_event(bot, event)
            ctx.should_call_send(event, USAGE_PRIVATE, result=None)


async def test_usage_hint_in_group_chat_adds_the_group_scope(app: App) -> None:
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_group("/memory")
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, USAGE_GROUP, result=None)
        event = qq_group("/memory user frobnicate")
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, USAGE_GROUP, result=None)


async def test_empty_memo_says_so(app: App) -> None:
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_private("/memory memo")
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, EMPTY_MEMO, result=None)


async def test_memo_is_a_group_forward_on_onebot(app: App) -> None:
    await _memo("QQPlatform_Group_20002", "本群是读书会\n每周五讨论")
    await _memo("QQPlatform_Private_10001", "个人的备忘")
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_group("/memory 备忘录")
        ctx.receive_event(bot, event)
        ctx.should_call_api(
            "send_group_forward_msg",
            {
                "group_id": 20002,
                "messages": [
                    {
                        "type": "node",
                        "data": {
                            "name": "备忘录",
                            "uin": BOT_QQ,
                            "content": "本群是读书会\n每周五讨论",
                        },
                    }
                ],
            },
            result={"message_id": 1},
        )


async def test_long_memo_is_a_private_forward_with_600_character_nodes(app: App) -> None:
    line = "猫" * 400
    await _memo("QQPlatform_Private_10001", f"{line}\n{line}")
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_private("/memory memo")
        ctx.receive_event(bot, event)
        ctx.should_call_api(
            "send_private_forward_msg",
            {
                "user_id": 10001,
                "messages": [
                    {"type": "node", "data": {"name": "备忘录", "uin": BOT_QQ, "content": line}},
                    {"type": "node", "data": {"name": "备忘录", "uin": BOT_QQ, "content": line}},
                ],
            },
            result={"message_id": 1},
        )


async def test_a_failed_forward_falls_back_to_plain_text(app: App) -> None:
    await _memo("QQPlatform_Private_10001", "喜欢猫")
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_private("/memory memo")
        ctx.receive_event(bot, event)
        ctx.should_call_api(
            "send_private_forward_msg",
            {
                "user_id": 10001,
                "messages": [
                    {"type": "node", "data": {"name": "备忘录", "uin": BOT_QQ, "content": "喜欢猫"}}
                ],
            },
            exception=RuntimeError("forward not supported by this OneBot implementation"),
        )
        ctx.should_call_send(event, "喜欢猫", result=None)


async def test_memo_on_the_console_is_plain_text_chunks(app: App) -> None:
    line = "狗" * 400
    await _memo("ConsolePlatform_Private_user", f"{line}\n{line}")
    async with app.test_matcher() as ctx:
        bot = console_bot(ctx)
        event = console_private("/memory memo")
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, line, result=None)
        ctx.should_call_send(event, line, result=None)


async def test_console_public_channel_is_a_group_with_its_own_memo(app: App) -> None:
    await _memo("ConsolePlatform_Group_general", "通用频道的备忘")
    async with app.test_matcher() as ctx:
        bot = console_bot(ctx)
        event = console_public("/memory memo")
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, "通用频道的备忘", result=None)


async def test_dmn_is_an_unknown_option_for_non_admins(app: App) -> None:
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        for sub in ("dmn", "run", "触发"):
            event = qq_group(f"/memory {sub}", role="owner")
            ctx.receive_event(bot, event)
            ctx.should_call_send(event, f"未知选项：{sub}", result=None)
        event = qq_private("/memory DMN")
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, "未知选项：dmn", result=None)


async def test_dmn_for_a_superuser_reports_that_l3_is_disabled(app: App) -> None:
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_private("/memory dmn", user_id=int(SUPERUSER_ID))
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, "潜意识调度未启用：subconscious.enabled 为 false", result=None)


async def test_dmn_when_enabled_but_no_loop_runs_says_not_started(app: App) -> None:
    from amrita_memory_pg.commands.memory_command import MemoryCommand
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime
    from amrita_memory_pg.settings import load_settings
    from amrita_memory_pg.tools.context import ToolContext

    memory = runtime.require()
    admin = ToolContext(platform="qq", user_id=SUPERUSER_ID, roles=frozenset({"superuser"}))
    for overrides, expected in (
        (
            {"subconscious.enabled": True},
            "潜意识调度未启用：subconscious.target_user_id 为空",
        ),
        (
            {"subconscious.enabled": True, "subconscious.target_user_id": "10001"},
            "潜意识调度未启动：本进程没有运行中的 L3 巩固循环（尚未接入或启动失败），检查日志",
        ),
    ):
        command = replace(
            MemoryCommand.over(memory),
            settings=load_settings(env={}, read_default_files=False, overrides=overrides),
        )
        assert (await command.run(admin, "dmn")).text == expected  # type: ignore[union-attr]

    triggered: list[bool] = []

    async def trigger() -> None:
        triggered.append(True)

    command = replace(
        MemoryCommand.over(memory, dmn_trigger=trigger),
        settings=load_settings(
            env={},
            read_default_files=False,
            overrides={"subconscious.enabled": True, "subconscious.target_user_id": "10001"},
        ),
    )
    lp_admin = ToolContext(platform="qq", user_id="1", roles=frozenset({"lp.admin"}))
    assert (await command.run(lp_admin, "触发")).text == "已触发，潜意识将在后台跑一轮"  # type: ignore[union-attr]
    assert triggered == [True]


async def test_group_delete_is_refused_for_members_before_any_lookup(app: App) -> None:
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        for role in ("member", None):
            event = qq_group("/memory group delete abc123", role=role)
            ctx.receive_event(bot, event)
            ctx.should_call_send(
                event, "❌ 无权删除👥群共享记忆，仅管理员和群主可删除", result=None
            )


async def test_missing_arguments_are_explained(app: App) -> None:
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        for text, reply in (
            ("/memory user delete", "请提供要删除的记忆 ID"),
            ("/memory delete", "请提供要删除的记忆 ID"),
            ("/memory group search", "请提供搜索关键词，例如: /memory user search 喜欢什么"),
            ("/memory search", "请提供搜索关键词，例如: /memory user search 喜欢什么"),
            (
                "/memory user add",
                "请提供要添加的记忆内容，例如: /memory user add 我喜欢猫（可选 -c 类别 -i 重要度）",
            ),
            (
                "/memory group add   ",
                "请提供要添加的记忆内容，例如: /memory group add 我喜欢猫（可选 -c 类别 -i 重要度）",
            ),
        ):
            event = qq_group(text)
            ctx.receive_event(bot, event)
            ctx.should_call_send(event, reply, result=None)


async def test_roles_come_from_superusers_and_the_onebot_sender(app: App) -> None:
    from amrita_memory_pg.integrations.nonebot.context import tool_context

    async with app.test_api() as ctx:
        bot = qq_bot(ctx)
        member = await tool_context(bot, qq_group("x", role="member"))
        assert (member.platform, member.user_id, member.group_id) == ("qq", "10001", "20002")
        assert member.roles == frozenset()
        assert member.session_key == "QQPlatform_Group_20002"
        assert (await tool_context(bot, qq_group("x", role="admin"))).roles == {"admin"}
        owner_su = await tool_context(bot, qq_group("x", user_id=int(SUPERUSER_ID), role="owner"))
        assert owner_su.roles == {"owner", "superuser"}
        assert owner_su.is_group_admin
        private = await tool_context(bot, qq_private("x"))
        assert (private.group_id, private.session_key) == (None, "QQPlatform_Private_10001")
        cbot = console_bot(ctx)
        console = await tool_context(cbot, console_private("x"))
        assert (console.platform, console.user_id, console.group_id) == ("console", "user", None)
        public = await tool_context(cbot, console_public("x"))
        assert public.group_id == "general"
