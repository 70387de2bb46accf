"""The AmritaBot adapter with amrita-core really installed, on the real embedded PostgreSQL.

Tools are registered in amrita-core's global ``ToolsManager`` and dispatched the way its
agent loop does it (``AgentStrategy.call_tool`` with a model-style ``ToolCall``); the memo
hook is fired through amrita-sense's ``MatcherFactory.trigger_event`` with the arguments
amrita-core's pre-completion node passes. The speaker comes from real OneBot v11 events
placed where AmritaBot puts them (``ChatObject`` hook kwargs under ``"amrita"``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest
from amrita_core import AmritaConfig, ChatObject, set_config
from amrita_core.agent.context import build_strategy_context
from amrita_core.builtins.agent import ReActAgentStrategy
from amrita_core.hook.event import CompletionEvent, EventTypeEnum, PreCompletionEvent
from amrita_core.hook.on import on_precompletion
from amrita_core.tools.manager import MultiToolsManager, ToolsManager
from amrita_core.types import Function, Message, SendMessageWrap, ToolCall
from amrita_sense.hook.matcher import EventRegistry, MatcherFactory
from nonebot.adapters.onebot.v11 import GroupMessageEvent, PrivateMessageEvent
from nonebot.adapters.onebot.v11 import Message as OneBotMessage
from nonebot.adapters.onebot.v11.event import Sender

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.integrations.amrita import (
    MEMO_HOOK_PRIORITY,
    Installation,
    chat_context,
    install,
    remove_matchers,
)
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.tools.context import ToolContext
from tests.support.reference import REFERENCE_TOOLS

ALICE = "10001"
GROUP = "20002"


def private_event(user_id: str = ALICE) -> PrivateMessageEvent:
    return PrivateMessageEvent(
        time=0,
        self_id=1,
        post_type="message",
        sub_type="friend",
        user_id=int(user_id),
        message_type="private",
        message_id=1,
        message=OneBotMessage("hi"),
        original_message=OneBotMessage("hi"),
        raw_message="hi",
        font=0,
        sender=Sender(user_id=int(user_id), nickname="alice"),
        to_me=True,
    )


def group_event(user_id: str = ALICE, role: str = "member") -> GroupMessageEvent:
    return GroupMessageEvent(
        time=0,
        self_id=1,
        post_type="message",
        sub_type="normal",
        user_id=int(user_id),
        message_type="group",
        group_id=int(GROUP),
        message_id=1,
        message=OneBotMessage("hi"),
        original_message=OneBotMessage("hi"),
        raw_message="hi",
        font=0,
        sender=Sender(user_id=int(user_id), nickname="alice", role=role),
        to_me=False,
    )


def chat_object(event: Any | None, config: AmritaConfig, bot: Any = None) -> ChatObject:
    """A turn as AmritaBot builds it: its NoneBot context in the hook kwargs."""
    hook_kwargs = {} if event is None else {"amrita": {"event": event, "bot": bot}}
    return ChatObject(
        train={"role": "system", "content": "你是 Amrita"},
        user_input="hi",
        session_id="test-session",
        config=config,
        hook_kwargs=hook_kwargs,
    )


def history() -> SendMessageWrap:
    return SendMessageWrap(
        Message(role="system", content="你是 Amrita"),
        [Message(role="user", content="早上好"), Message(role="assistant", content="早")],
        Message(role="user", content="hi"),
    )


def dumped(wrap: SendMessageWrap) -> list[dict[str, Any]]:
    return [m.model_dump() for m in wrap]


@pytest.fixture
async def mem(settings: Settings) -> AsyncIterator[Memory]:
    async with open_memory(settings) as memory:
        yield memory


@pytest.fixture
def config() -> AmritaConfig:
    """A fresh amrita-core config, also made the global one (as a host's start-up does)."""
    cfg = AmritaConfig()
    set_config(cfg)
    return cfg


@pytest.fixture
def installed(mem: Memory) -> Iterator[Installation]:
    """Our adapter in amrita-core's global registries, taken out again afterwards."""
    assert not any(ToolsManager().has_tool(name) for name in REFERENCE_TOOLS)
    installation = install(mem, enrich=liteperm_stub)
    try:
        yield installation
    finally:
        installation.uninstall()
    assert not any(ToolsManager().has_tool(name) for name in REFERENCE_TOOLS)


#: users LitePerm would grant memory.knowledge to, in these tests
LITEPERM_KNOWLEDGE = {"30003"}


async def liteperm_stub(chat_object: Any, ctx: ToolContext) -> ToolContext:
    """What the NoneBot plugin's LitePerm look-up adds, for the users listed above."""
    if ctx.user_id in LITEPERM_KNOWLEDGE:
        return ToolContext(
            platform=ctx.platform,
            user_id=ctx.user_id,
            group_id=ctx.group_id,
            roles=ctx.roles | {"memory.knowledge"},
        )
    return ctx


async def call(chat: ChatObject, config: AmritaConfig, name: str, args: dict[str, Any]) -> str:
    """One model tool call, dispatched by amrita-core's default agent strategy."""
    ctx = build_strategy_context(
        user_input="hi",
        original_context=history(),
        chat_object=chat,
        config=config,
        tools_manager=ToolsManager(),
    )
    strategy = ReActAgentStrategy(ctx)
    tool_call = ToolCall(id="call_1", function=Function(name=name, arguments=json.dumps(args)))
    return await strategy.call_tool(tool_call)


async def fire_pre_completion(chat: ChatObject, config: AmritaConfig) -> PreCompletionEvent:
    """Trigger the pre-completion event with what amrita-core's pre-runner passes."""
    event = PreCompletionEvent(chat_object=chat, user_input="hi", original_context=history())
    await MatcherFactory.trigger_event(event, config, chat, **chat._hook_kwargs)
    return event


# ---------------------------------------------------------------- tools


def test_tools_are_registered_in_the_global_manager_with_our_schemas(
    installed: Installation, mem: Memory, config: AmritaConfig
) -> None:
    # the reference's tools, then ours (memory_load/unload_context)
    assert installed.tools[: len(REFERENCE_TOOLS)] == REFERENCE_TOOLS
    assert installed.tools == [s["function"]["name"] for s in mem.tool_schemas()]
    for ours in mem.tool_schemas():
        name = ours["function"]["name"]
        tool = ToolsManager().get_tool(name)
        assert tool is not None, name
        assert tool.custom_run is True
        assert tool.data.strict is True
        expected = copy.deepcopy(ours["function"])
        # the two things amrita-core's schema model cannot hold (documented in amrita_schema)
        del expected["parameters"]["additionalProperties"]
        for prop in expected["parameters"]["properties"].values():
            if "enum" in prop:
                prop["enum"] = [v for v in prop["enum"] if v is not None]
        assert tool.data.function.model_dump() == expected, name
        assert ToolsManager().tools_meta_dict()[name]["function"]["name"] == name


async def test_write_then_read_through_amrita_cores_tool_call(
    installed: Installation, mem: Memory, config: AmritaConfig
) -> None:
    chat = chat_object(private_event(), config)
    written = json.loads(
        await call(
            chat,
            config,
            "write_memory",
            {
                "content": "喜欢在杭州喝龙井",
                "tags": "preference",
                "importance": "high",
                "scope": "user",
            },
        )
    )
    assert written["status"] == "success"
    assert written["scope"] == "user"

    reply = await call(chat, config, "read_memory", {"query": "龙井", "scope": "user"})
    result = json.loads(reply)
    assert result["ids"] == [[written["memory_id"]]]
    assert result["documents"] == [["喜欢在杭州喝龙井"]]
    # the reply is our JSON text, unchanged: the same call through the core gives the same
    direct = await mem.call_tool(
        "list_memory", {"scope": "user"}, ToolContext(platform="qq", user_id=ALICE)
    )
    assert await call(chat, config, "list_memory", {"scope": "user"}) == direct
    stored = await mem.pool.fetchval(
        "SELECT partition_key FROM amrita_memory.memory WHERE content = $1", "喜欢在杭州喝龙井"
    )
    assert stored == f"QQPlatform_Private_{ALICE}"


async def test_group_memories_are_shared_in_the_group_and_absent_from_private_chat(
    installed: Installation, config: AmritaConfig
) -> None:
    in_group = chat_object(group_event(), config)
    written = json.loads(
        await call(
            in_group,
            config,
            "write_memory",
            {"content": "周五团建", "tags": "event", "importance": "medium", "scope": "group"},
        )
    )
    assert written["status"] == "success"
    found = json.loads(
        await call(in_group, config, "read_memory", {"query": "团建", "scope": "group"})
    )
    assert found["documents"] == [["周五团建"]]
    private = chat_object(private_event(), config)
    mine = json.loads(
        await call(private, config, "read_memory", {"query": "团建", "scope": "user"})
    )
    assert mine["documents"] == [[]]


async def test_a_bad_argument_gets_our_error_envelope(
    installed: Installation, config: AmritaConfig
) -> None:
    chat = chat_object(private_event(), config)
    group_in_private = json.loads(
        await call(
            chat,
            config,
            "write_memory",
            {"content": "x", "tags": "t", "importance": "low", "scope": "group"},
        )
    )
    assert group_in_private == {"status": "error", "message": "当前不在群聊中，无法使用群共享记忆"}
    unknown = json.loads(await call(chat, config, "list_memory", {"scope": "user", "page": 2}))
    assert unknown["status"] == "error"
    assert "page" in unknown["message"]


async def test_schema_violations_are_refused_by_amrita_core_before_our_handler(
    installed: Installation, config: AmritaConfig
) -> None:
    """As in the reference: the host checks enums/required fields and answers ``ERR:``."""
    chat = chat_object(private_event(), config)
    with pytest.raises(pydantic.ValidationError):
        await call(chat, config, "write_memory", {"content": "x", "tags": "t", "scope": "user"})
    # with the host's check off, our own validation answers in the error envelope
    config.function_config.validate_tool_arguments = False
    missing = json.loads(
        await call(chat, config, "write_memory", {"content": "x", "tags": "t", "scope": "user"})
    )
    assert missing == {
        "status": "error",
        "message": "调用 write_memory 工具必须带有 importance 参数",
    }


async def test_a_tool_call_without_an_amritabot_context_writes_nothing(
    installed: Installation, mem: Memory, config: AmritaConfig
) -> None:
    reply = json.loads(
        await call(chat_object(None, config), config, "update_memo", {"content": "x"})
    )
    assert reply["status"] == "error"
    assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memo") == 0


async def test_installing_next_to_the_old_plugins_tools_fails_and_registers_nothing(
    mem: Memory,
) -> None:
    manager = MultiToolsManager()
    first = install(mem, manager=manager, memo_hook=False)
    with pytest.raises(ConfigError, match="write_memory"):
        install(mem, manager=manager, memo_hook=False)
    assert sorted(manager.get_tools()) == sorted(first.tools)
    assert set(REFERENCE_TOOLS) <= set(first.tools)
    first.uninstall()
    assert manager.get_tools() == {}


def test_the_speaker_comes_from_the_onebot_event_in_the_hook_kwargs(config: AmritaConfig) -> None:
    bot = SimpleNamespace(config=SimpleNamespace(superusers={"10009"}))
    assert chat_context(chat_object(private_event(), config)) == ToolContext(
        platform="qq", user_id=ALICE
    )
    member = chat_context(chat_object(group_event(role="member"), config))
    assert member == ToolContext(platform="qq", user_id=ALICE, group_id=GROUP)
    assert chat_context(chat_object(group_event(role="admin"), config)) == ToolContext(
        platform="qq", user_id=ALICE, group_id=GROUP, roles=frozenset({"admin"})
    )
    owner_and_superuser = chat_context(chat_object(group_event("10009", "owner"), config, bot))
    assert owner_and_superuser is not None
    assert owner_and_superuser.roles == frozenset({"owner", "superuser"})
    assert owner_and_superuser.session_key == f"QQPlatform_Group_{GROUP}"
    assert chat_context(chat_object(None, config)) is None


# ---------------------------------------------------------------- memo hook


def test_the_memo_hook_is_registered_at_priority_15_and_does_not_block(
    installed: Installation,
) -> None:
    pre, post = installed.matchers
    handlers = EventRegistry().get_handlers(EventTypeEnum.BEFORE_COMPLETION)
    ours = [h for h in handlers[MEMO_HOOK_PRIORITY] if h.matcher is pre]
    assert len(ours) == 1
    assert MEMO_HOOK_PRIORITY == 15
    assert pre.priority == 15
    assert pre.block is False
    assert post.event_type == EventTypeEnum.COMPLETION
    assert post.block is False


async def test_private_chat_gets_its_memo_as_a_system_message_at_index_0(
    installed: Installation, mem: Memory, config: AmritaConfig
) -> None:
    alice = ToolContext(platform="qq", user_id=ALICE)
    await mem.call_tool("update_memo", {"content": "称呼：小艾；喜欢猫"}, alice)
    chat = chat_object(private_event(), config)
    before = dumped(history())
    event = await fire_pre_completion(chat, config)
    first = event.message.memory[0]
    assert isinstance(first, Message)
    assert first.role == "system"
    assert first.content == await mem.memory_block(alice)
    assert "<MEMO>\n称呼：小艾；喜欢猫\n</MEMO>" in first.content
    # everything else untouched: the host prompt first, then memo, then the old history
    after = dumped(event.message)
    assert after[0] == before[0]
    assert after[2:] == before[1:]


async def test_group_chat_gets_the_group_memo_not_the_speakers(
    installed: Installation, mem: Memory, config: AmritaConfig
) -> None:
    await mem.call_tool("update_memo", {"content": "私人备忘"}, ToolContext("qq", ALICE))
    await mem.call_tool("update_memo", {"content": "本群禁止刷屏"}, ToolContext("qq", ALICE, GROUP))
    event = await fire_pre_completion(chat_object(group_event(), config), config)
    first = event.message.memory[0]
    assert first.role == "system"
    assert "本群禁止刷屏" in first.content
    assert "私人备忘" not in first.content
    assert len(event.message.memory) == len(history().memory) + 1


async def test_an_empty_memo_or_no_bot_context_leaves_the_messages_unchanged(
    installed: Installation, mem: Memory, config: AmritaConfig
) -> None:
    event = await fire_pre_completion(chat_object(private_event(), config), config)
    assert dumped(event.message) == dumped(history())
    await mem.call_tool("update_memo", {"content": "有内容"}, ToolContext("qq", ALICE))
    event = await fire_pre_completion(chat_object(None, config), config)
    assert dumped(event.message) == dumped(history())


async def test_the_memo_lands_in_front_of_a_priority_10_hooks_message(
    installed: Installation, mem: Memory, config: AmritaConfig
) -> None:
    """Ascending priority: the reference DMN hook (10) inserts first, the memo (15) after."""
    await mem.call_tool("update_memo", {"content": "喜欢猫"}, ToolContext("qq", ALICE))
    dmn = on_precompletion(priority=10, block=False)

    async def dmn_hook(event: PreCompletionEvent) -> None:
        event.message.memory.insert(0, Message(role="system", content="DMN"))

    dmn.append_handler(dmn_hook)
    try:
        event = await fire_pre_completion(chat_object(private_event(), config), config)
    finally:
        remove_matchers([dmn])
    assert "喜欢猫" in event.message.memory[0].content
    assert event.message.memory[1].content == "DMN"


async def test_the_memo_is_taken_out_before_amrita_core_stores_the_history(
    installed: Installation, mem: Memory, config: AmritaConfig
) -> None:
    await mem.call_tool("update_memo", {"content": "喜欢猫"}, ToolContext("qq", ALICE))
    chat = chat_object(private_event(), config)
    pre = await fire_pre_completion(chat, config)
    wrap = pre.message
    assert "喜欢猫" in wrap.memory[0].content
    done = CompletionEvent("hi", wrap, chat, "好的")
    await MatcherFactory.trigger_event(done, config, chat, **chat._hook_kwargs)
    stored = [m.model_dump() for m in wrap.unwrap(exclude_system=True)]
    assert stored == [m.model_dump() for m in history().unwrap(exclude_system=True)]


async def test_knowledge_reads_are_registered_and_decided_per_call(
    installed: Installation, mem: Memory, config: AmritaConfig
) -> None:
    """Every chat tool is offered to every speaker; the knowledge reads are allowed or
    refused by the call, with LitePerm's node from the adapter's enrich hook."""
    assert {"knowledge_list", "knowledge_read", "knowledge_search", "knowledge_suggest"} <= set(
        installed.tools
    )
    await mem.knowledge.create(title="秘密", summary="只给有权限的人", body="b")
    refused = json.loads(
        await call(chat_object(private_event(ALICE), config), config, "knowledge_list", {})
    )
    assert refused == {
        "status": "error",
        "message": "无权限读取知识库（需要 LP 节点 memory.knowledge，或 lp.admin / 超级用户）",
    }
    allowed = json.loads(
        await call(chat_object(group_event("30003"), config), config, "knowledge_list", {})
    )
    assert allowed["status"] == "success" and allowed["items"][0]["title"] == "秘密"
    # anyone may suggest
    suggested = json.loads(
        await call(
            chat_object(private_event(ALICE), config),
            config,
            "knowledge_suggest",
            {"action": "create", "title": "t", "summary": "s", "body": "b", "reason": "r"},
        )
    )
    assert suggested["status"] == "success"
