"""Under AmritaBot: the speaker read from its per-turn context (a real OneBot event), the
tools registered in amrita-core's global manager by the plugin's start-up path, and a
group write by an admin through amrita-core's agent call path.

amrita-core is imported inside the tests, not at collection: the plugin loads first, as
in a plain NoneBot bot (an imported amrita_core turns the built-in responder off).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from nonebug import App

from tests.nonebot.conftest import SUPERUSER_ID
from tests.nonebot.support import qq_bot, qq_group, qq_private

_ids = itertools.count()


def host_turn(bot: Any, event: Any) -> Any:
    """A chat object as AmritaBot builds it: its context under hook_kwargs["amrita"]."""
    from amrita_core.chatmanager.chat_object import ChatObject
    from amrita_core.config import AmritaConfig, set_config

    set_config(AmritaConfig())
    return ChatObject(
        train={"role": "system", "content": "你是一个助手"},
        user_input="你好",
        session_id=f"s{next(_ids)}",
        hook_kwargs={"amrita": {"event": event, "bot": bot, "matcher": None}},
    )


async def test_the_speaker_comes_from_the_hosts_onebot_event(app: App) -> None:
    from amrita_core.chatmanager.chat_object import ChatObject

    from amrita_memory_pg.integrations.amrita import speaker_from_host

    async with app.test_api() as ctx:
        bot = qq_bot(ctx)
        private = await speaker_from_host(host_turn(bot, qq_private("hi", user_id=10001)))
        admin = await speaker_from_host(
            host_turn(bot, qq_group("hi", user_id=10002, group_id=555, role="admin"))
        )
        root = await speaker_from_host(
            host_turn(bot, qq_group("hi", user_id=int(SUPERUSER_ID), group_id=555))
        )
        outside = await speaker_from_host(
            ChatObject(train={"role": "system", "content": "x"}, user_input="y", session_id="z")
        )
    assert private is not None
    assert (private.platform, private.user_id, private.group_id) == ("qq", "10001", None)
    assert private.session_key == "QQPlatform_Private_10001"
    assert admin is not None
    assert (admin.user_id, admin.group_id, admin.roles) == ("10002", "555", frozenset({"admin"}))
    assert admin.session_key == "QQPlatform_Group_555"
    assert root is not None
    assert "superuser" in root.roles
    assert outside is None


async def test_startup_path_registers_in_amritas_global_manager(app: App) -> None:
    from amrita_core.agent.context import StrategyContext
    from amrita_core.builtins.agent.react_base import NoActionAgentStrategy
    from amrita_core.config import get_config
    from amrita_core.tools.manager import ToolsManager
    from amrita_core.types.message import Message, SendMessageWrap
    from amrita_core.types.tool import Function, ToolCall

    from amrita_memory_pg.integrations.amrita import MEMORY_TOOLS, AmritaMemory
    from amrita_memory_pg.integrations.nonebot import install_amrita, runtime

    manager = ToolsManager()
    for name in MEMORY_TOOLS:
        manager.remove_tool(name)
    install_amrita(runtime)
    try:
        assert all(manager.has_tool(name) for name in MEMORY_TOOLS)
        async with app.test_api() as ctx:
            bot = qq_bot(ctx)
            turn = host_turn(bot, qq_group("记住群规", user_id=10002, group_id=555, role="admin"))
            agent = NoActionAgentStrategy(
                StrategyContext(
                    user_input="记住群规",
                    original_context=SendMessageWrap(
                        {"role": "system", "content": "x"},
                        [Message[str](role="user", content="记住群规")],
                    ),
                    chat_object=turn,
                    tools_manager=manager,
                    config=get_config(),
                )
            )
            reply = await agent.call_tool(
                ToolCall(
                    id="c1",
                    function=Function(
                        name="write_memory",
                        arguments=json.dumps(
                            {
                                "content": "群规：周五晚上不刷屏",
                                "tags": "rule",
                                "importance": "medium",
                                "scope": "group",
                            }
                        ),
                    ),
                )
            )
        assert json.loads(reply)["status"] == "success"
        row = await runtime.require().pool.fetchrow(
            "SELECT partition_key, scope, author FROM amrita_memory.memory"
        )
        assert dict(row) == {
            "partition_key": "QQPlatform_Group_555",
            "scope": "group",
            "author": "10002",
        }
    finally:
        AmritaMemory(lambda: None, manager=manager).unregister_tools()
