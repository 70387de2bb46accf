"""The second seed's model in the NoneBot plugin: the session job is scheduled, and
memory_load_context asks QQ (get_group_member_info) whether the speaker is in the group."""

from __future__ import annotations

import json
from datetime import timedelta

from nonebot.adapters.onebot.v11.exception import ActionFailed
from nonebug import App

from amrita_memory_pg.tools.context import ToolContext
from tests.nonebot.support import qq_bot

ALICE = ToolContext(platform="qq", user_id="10001")


async def test_the_session_job_is_registered(app: App) -> None:
    from apscheduler.triggers.interval import IntervalTrigger
    from nonebot_plugin_apscheduler import scheduler

    job = scheduler.get_job("amrita_memory_session_expiry")
    assert job is not None and isinstance(job.trigger, IntervalTrigger)
    assert job.trigger.interval == timedelta(minutes=5)


async def test_loading_a_group_asks_the_platform_whether_the_speaker_is_a_member(app: App) -> None:
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    memory = runtime.require()
    assert memory.bot_memories.membership.source == "onebot"
    async with app.test_api() as ctx:
        qq_bot(ctx)
        ctx.should_call_api(
            "get_group_member_info",
            {"group_id": 30003, "user_id": 10001, "no_cache": True},
            result={"group_id": 30003, "user_id": 10001, "role": "member"},
        )
        allowed = json.loads(
            await memory.call_tool("memory_load_context", {"scope": "group:30003"}, ALICE)
        )
        assert allowed["status"] == "success", allowed
        ctx.should_call_api(
            "get_group_member_info",
            {"group_id": 30004, "user_id": 10001, "no_cache": True},
            exception=ActionFailed(retcode=100, status="failed"),
        )
        refused = json.loads(
            await memory.call_tool("memory_load_context", {"scope": "group:30004"}, ALICE)
        )
        assert refused["status"] == "error" and "无权装载群 30004" in refused["message"]
    await memory.call_tool("memory_unload_context", {"scope": "group:30003"}, ALICE)
