"""The message hooks (chat log + heatmap), the OneBot send recorder, and the built-in
responder against a scripted chat-completions server over real HTTP (tool loop, memo
injection in private and group chats)."""

from __future__ import annotations

import json

from nonebug import App

from amrita_memory_pg.commands.memory_command.memo import EMPTY_MEMO
from amrita_memory_pg.testing_llm import ScriptedLLM
from tests.nonebot.support import console_bot, console_private, qq_bot, qq_group, qq_private


def _runtime():  # type: ignore[no-untyped-def]
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    return runtime


async def test_every_message_is_logged_and_counted_without_a_reply(app: App) -> None:
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        ctx.receive_event(bot, qq_group("今天好冷", user_id=10001))
        ctx.receive_event(bot, qq_group("是啊", user_id=10002))
        ctx.receive_event(bot, qq_private("在吗", user_id=10001, to_me=False))
    memory = _runtime().require()
    group = await memory.activity.recent("QQPlatform_Group_20002")
    assert [(line.user_id, line.group_id, line.role, line.text) for line in group] == [
        ("10001", "20002", "user", "今天好冷"),
        ("10002", "20002", "user", "是啊"),
    ]
    private = await memory.activity.recent("QQPlatform_Private_10001")
    assert [(line.group_id, line.text) for line in private] == [(None, "在吗")]
    alice = await memory.activity.heatmap("QQPlatform_Private_10001")
    bob = await memory.activity.heatmap("QQPlatform_Private_10002")
    assert sum(map(sum, alice)) == 2
    assert sum(map(sum, bob)) == 1


async def test_a_hook_failure_never_reaches_the_chat(app: App) -> None:
    from amrita_memory_pg.integrations.nonebot.hooks import record_incoming

    runtime = _runtime()
    memory = runtime.require()
    original = memory.activity.record_user_message

    async def broken(**kwargs: object) -> None:
        raise RuntimeError("disk full")

    memory.activity.record_user_message = broken  # type: ignore[method-assign]
    try:
        async with app.test_api() as ctx:
            await record_incoming(runtime, qq_bot(ctx), qq_group("hello"))
    finally:
        memory.activity.record_user_message = original  # type: ignore[method-assign]


async def test_onebot_sends_are_logged_as_bot_lines(app: App) -> None:
    from nonebot.adapters.onebot.v11 import Message

    from amrita_memory_pg.integrations.nonebot.hooks import record_outgoing

    runtime = _runtime()
    async with app.test_api() as ctx:
        bot = qq_bot(ctx)
        await record_outgoing(
            runtime,
            bot,
            None,
            "send_msg",
            {"message_type": "group", "group_id": 20002, "user_id": 1, "message": Message("嗯")},
        )
        await record_outgoing(
            runtime, bot, None, "send_private_msg", {"user_id": 10001, "message": "好的"}
        )
        await record_outgoing(runtime, bot, RuntimeError("x"), "send_msg", {"user_id": 1})
        await record_outgoing(runtime, bot, None, "get_status", {})
    memory = runtime.require()
    group = await memory.activity.recent("QQPlatform_Group_20002")
    assert [(line.role, line.user_id, line.text) for line in group] == [("bot", "42", "嗯")]
    private = await memory.activity.recent("QQPlatform_Private_10001")
    assert [(line.role, line.group_id, line.text) for line in private] == [("bot", None, "好的")]
    assert sum(map(sum, await memory.activity.heatmap("QQPlatform_Private_1"))) == 0


async def test_responder_runs_the_tool_loop_and_answers(app: App, llm_stub: ScriptedLLM) -> None:
    llm_stub.call("append_memo", {"content": "喜欢猫"})
    llm_stub.call("read_memo", {}, ("update_memo", {"content": "喜欢猫\n住在杭州"}))
    llm_stub.say("记住啦：你喜欢猫，住在杭州。")
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_private("我喜欢猫，住在杭州", to_me=True)
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, "记住啦：你喜欢猫，住在杭州。", result=None)
    memory = _runtime().require()
    assert (await memory.memos.get("QQPlatform_Private_10001")).content == "喜欢猫\n住在杭州"
    first, _second, third = llm_stub.requests
    assert first["model"] == "stub-model"
    assert {t["function"]["name"] for t in first["tools"]} >= {"read_memo", "append_memo"}
    assert first["messages"][-1] == {"role": "user", "content": "我喜欢猫，住在杭州"}
    tool_replies = [m for m in third["messages"] if m["role"] == "tool"]
    assert json.loads(tool_replies[0]["content"])["message"] == "备忘录已追加"
    assert json.loads(tool_replies[1]["content"])["memo"] == "喜欢猫"
    assert json.loads(tool_replies[2]["content"])["message"] == "备忘录已更新"


async def test_responder_injects_the_personal_memo_in_private(
    app: App, llm_stub: ScriptedLLM
) -> None:
    memory = _runtime().require()
    await memory.memos.replace("QQPlatform_Private_10001", "用户叫小明")
    llm_stub.say("你好小明")
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_private("你好", to_me=True)
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, "你好小明", result=None)
    systems = [m["content"] for m in llm_stub.requests[0]["messages"] if m["role"] == "system"]
    assert systems[1] == (
        "以下是关于当前对话主体的备忘信息，位于<MEMO>块\n"
        "仅必要时可通过 update_memo 工具维护。\n<MEMO>\n用户叫小明\n</MEMO>"
    )


async def test_responder_injects_the_group_memo_in_a_group(app: App, llm_stub: ScriptedLLM) -> None:
    memory = _runtime().require()
    await memory.memos.replace("QQPlatform_Private_10001", "用户叫小明")
    await memory.memos.replace("QQPlatform_Group_20002", "本群是读书会")
    llm_stub.say("读书会好！")
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        ctx.receive_event(bot, qq_group("大家好", user_id=10002))  # not to the bot: logged only
        event = qq_group("今天读什么", to_me=True)
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, "读书会好！", result=None)
    (request,) = llm_stub.requests
    systems = [m["content"] for m in request["messages"] if m["role"] == "system"]
    assert "<MEMO>\n本群是读书会\n</MEMO>" in systems[1]
    assert all("小明" not in s for s in systems)  # W3 injection is off by default
    assert request["messages"][-2:] == [
        {"role": "user", "content": "[10002] 大家好"},
        {"role": "user", "content": "[10001] 今天读什么"},
    ]


async def test_responder_on_the_console_logs_its_answer(app: App, llm_stub: ScriptedLLM) -> None:
    llm_stub.say("喵")
    async with app.test_matcher() as ctx:
        bot = console_bot(ctx)
        event = console_private("叫一声")
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, "喵", result=None)
    lines = await _runtime().require().activity.recent("ConsolePlatform_Private_user")
    assert [(line.role, line.text) for line in lines] == [("user", "叫一声"), ("bot", "喵")]


async def test_responder_stops_after_the_round_limit(app: App, llm_stub: ScriptedLLM) -> None:
    for _ in range(5):
        llm_stub.call("read_memo", {})
    llm_stub.say("好吧，我直接回答")
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_private("循环一下", to_me=True)
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, "好吧，我直接回答", result=None)
    assert len(llm_stub.requests) == 6
    assert "tools" not in llm_stub.requests[-1]


async def test_commands_are_not_answered_by_the_responder(app: App, llm_stub: ScriptedLLM) -> None:
    async with app.test_matcher() as ctx:
        bot = qq_bot(ctx)
        event = qq_private("/memory memo", to_me=True)
        ctx.receive_event(bot, event)
        ctx.should_call_send(event, EMPTY_MEMO, result=None)
        ctx.receive_event(bot, qq_private("/unknowncmd", to_me=True))
    assert llm_stub.requests == []


async def test_responder_is_off_when_amrita_is_present(app: App, monkeypatch: object) -> None:
    import sys

    from amrita_memory_pg.integrations.nonebot.responder import amrita_present, responder_enabled
    from amrita_memory_pg.settings import load_settings

    configured = load_settings(
        env={"LLM_BASE_URL": "http://127.0.0.1:1/v1", "LLM_MODEL": "m"}, read_default_files=False
    )
    assert not amrita_present()
    assert responder_enabled(configured)
    assert not responder_enabled(load_settings(env={}, read_default_files=False))
    sys.modules["amrita_core"] = sys.modules["json"]  # stands for "amrita_core was imported"
    try:
        assert amrita_present()
        assert not responder_enabled(configured)
    finally:
        del sys.modules["amrita_core"]
