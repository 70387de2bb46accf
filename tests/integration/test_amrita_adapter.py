"""The AmritaBot adapter, driven through amrita-core itself (installed with the amrita extra).

Tools are registered in an amrita-core tool manager and called the way its agent calls
them (``AgentStrategy.call_tool`` with the model's JSON arguments, schema validation
on); the memo hook is fired by amrita-core's event dispatcher (``MatcherManager``) with
a real ``PreCompletionEvent``. The speaker comes from the chat object's host context,
as AmritaBot passes it (``hook_kwargs["amrita"]``); reading a real NoneBot event from it
is tested with NoneBot running, in tests/nonebot/test_amrita_host.py.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from amrita_core.builtins.agent.react_base import NoActionAgentStrategy
from amrita_core.chatmanager.chat_object import ChatObject, MatcherManager
from amrita_core.config import AmritaConfig, get_config, set_config
from amrita_core.hook.event import EventTypeEnum, PreCompletionEvent
from amrita_core.tools.manager import MultiToolsManager, ToolsManager
from amrita_core.types.message import Message, SendMessageWrap
from amrita_core.types.tool import Function, ToolCall
from amrita_sense.hook.matcher import EventRegistry
from pydantic import ValidationError

from amrita_memory_pg.domain.memo import MEMO_HEADER
from amrita_memory_pg.integrations.amrita import (
    MEMO_HOOK_PRIORITY,
    AmritaMemory,
    host_context,
)
from amrita_memory_pg.service import Memory
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on

_ids = itertools.count()


@pytest.fixture(autouse=True, scope="module")
def amrita_config() -> None:
    """What a host does first: give amrita-core its global config (defaults here)."""
    set_config(AmritaConfig())


async def speaker(chat_object: Any) -> ToolContext | None:
    """A host whose per-turn context carries plain ids (AmritaBot's carries a NoneBot event)."""
    host = host_context(chat_object)
    if host is None:
        return None
    return ToolContext(
        platform="qq",
        user_id=host["user_id"],
        group_id=host.get("group_id"),
        roles=frozenset(host.get("roles", ())),
    )


def chat_object(user_id: str | None, group_id: str | None = None, **extra: Any) -> ChatObject:
    host = None if user_id is None else {"user_id": user_id, "group_id": group_id, **extra}
    return ChatObject(
        train={"role": "system", "content": "你是一个助手"},
        user_input="你好",
        session_id=f"s{next(_ids)}",
        hook_kwargs={"amrita": host} if host else None,
    )


def strategy(obj: ChatObject, manager: MultiToolsManager) -> NoActionAgentStrategy:
    from amrita_core.agent.context import StrategyContext

    context = SendMessageWrap(
        {"role": "system", "content": "你是一个助手"},
        [Message[str](role="user", content="你好")],
    )
    return NoActionAgentStrategy(
        StrategyContext(
            user_input="你好",
            original_context=context,
            chat_object=obj,
            tools_manager=manager,
            config=get_config(),
        )
    )


async def call(agent: NoActionAgentStrategy, name: str, args: dict[str, Any]) -> Any:
    """One tool call as the model makes it: JSON arguments, through amrita-core."""
    reply = await agent.call_tool(
        ToolCall(id=f"c{next(_ids)}", function=Function(name=name, arguments=json.dumps(args)))
    )
    return json.loads(reply)


@pytest.fixture
async def memory(db_dsn: str, tmp_path: Path) -> AsyncIterator[Memory]:
    async with memory_on(db_dsn, tmp_path) as mem:
        yield mem


@pytest.fixture
def manager() -> MultiToolsManager:
    return MultiToolsManager()


async def test_tools_register_under_the_reference_names_with_our_schemas(
    memory: Memory, manager: MultiToolsManager
) -> None:
    names = AmritaMemory(memory, resolver=speaker, manager=manager).register_tools()
    assert sorted(names) == sorted(
        [
            "write_memory",
            "read_memory",
            "update_memory",
            "delete_memory",
            "list_memory",
            "read_memo",
            "append_memo",
            "update_memo",
        ]
    )
    registered = manager.tools_meta_dict(exclude_none=True)
    for schema in memory.tool_schemas(names):
        name = schema["function"]["name"]
        assert registered[name]["function"]["name"] == name
        assert registered[name]["function"]["description"] == schema["function"]["description"]
        assert (
            registered[name]["function"]["parameters"]["required"]
            == schema["function"]["parameters"]["required"]
        )
        assert set(registered[name]["function"]["parameters"]["properties"]) == set(
            schema["function"]["parameters"]["properties"]
        )
        assert manager.get_tool(name).custom_run  # the tool gets the chat context


async def test_write_then_read_through_amrita_core(
    memory: Memory, manager: MultiToolsManager
) -> None:
    AmritaMemory(memory, resolver=speaker, manager=manager).register_tools()
    agent = strategy(chat_object("10001"), manager)
    written = await call(
        agent,
        "write_memory",
        {"content": "我喜欢喝乌龙茶", "tags": "preference", "importance": "high", "scope": "user"},
    )
    assert written["status"] == "success"
    assert len(written["memory_id"]) == 32
    found = await call(agent, "read_memory", {"query": "乌龙茶", "scope": "user"})
    assert found["documents"] == [["我喜欢喝乌龙茶"]]
    assert found["ids"] == [[written["memory_id"]]]
    # stored in the speaker's personal partition, like the reference
    row = await memory.pool.fetchrow(
        "SELECT partition_key, importance, source FROM amrita_memory.memory WHERE id = $1",
        written["memory_id"],
    )
    assert dict(row) == {
        "partition_key": "QQPlatform_Private_10001",
        "importance": 8,
        "source": "auto",
    }
    # another user does not see it
    other = strategy(chat_object("20002"), manager)
    assert (await call(other, "read_memory", {"query": "乌龙茶", "scope": "user"}))["ids"] == [[]]


async def test_bad_arguments_and_missing_context_are_error_envelopes(
    memory: Memory, manager: MultiToolsManager
) -> None:
    AmritaMemory(memory, resolver=speaker, manager=manager).register_tools()
    agent = strategy(chat_object("10001"), manager)
    group_in_private = await call(
        agent,
        "write_memory",
        {"content": "群规", "tags": "rule", "importance": "low", "scope": "group"},
    )
    assert group_in_private["status"] == "error"
    assert "群" in group_in_private["message"]
    unknown = await call(agent, "delete_memory", {"id": "f" * 32, "scope": "user"})
    assert unknown["status"] == "error"
    # amrita-core checks our schema before the tool runs (its agent loop turns this into
    # an "ERR: …" tool result, as with the old plugin)
    with pytest.raises(ValidationError, match="importance"):
        await call(
            agent,
            "write_memory",
            {"content": "x", "tags": "t", "importance": "urgent", "scope": "user"},
        )
    no_host = await call(strategy(chat_object(None), manager), "read_memo", {})
    assert no_host["status"] == "error"
    assert "read_memo" in no_host["message"]
    assert await memory.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0


async def test_group_memo_tools_and_not_ready(memory: Memory, manager: MultiToolsManager) -> None:
    opened: list[Memory] = []
    adapter = AmritaMemory(lambda: opened[0] if opened else None, resolver=speaker, manager=manager)
    with pytest.raises(RuntimeError, match="not open"):
        adapter.register_tools()
    opened.append(memory)
    adapter.register_tools()
    agent = strategy(chat_object("10001", "555", roles=["admin"]), manager)
    assert (await call(agent, "update_memo", {"content": "本群是摄影群"}))["status"] == "success"
    assert (await call(agent, "read_memo", {}))["memo"] == "本群是摄影群"
    assert (await memory.memos.get("QQPlatform_Group_555")).content == "本群是摄影群"
    opened.clear()
    assert (await call(agent, "read_memo", {}))["status"] == "error"


async def trigger(obj: ChatObject, history: list[Any]) -> PreCompletionEvent:
    """Fire amrita-core's pre-completion event the way ChatObject's workflow does."""
    context = SendMessageWrap({"role": "system", "content": "你是一个助手"}, history)
    event = PreCompletionEvent(chat_object=obj, user_input="你好", original_context=context)
    await MatcherManager.trigger_event(
        event, get_config(), obj, None, *obj._hook_args, **obj._hook_kwargs
    )
    return event


async def test_memo_hook_through_amrita_core_dispatch(memory: Memory) -> None:
    adapter = AmritaMemory(memory, resolver=speaker, manager=MultiToolsManager())
    adapter.register_memo_hook()
    adapter.register_memo_hook()  # idempotent: one handler
    handlers = EventRegistry().get_handlers(EventTypeEnum.BEFORE_COMPLETION)
    ours = [h for p, hs in handlers.items() for h in hs if h.function.__name__ == "inject_memo"]
    assert [h.priority for h in ours] == [MEMO_HOOK_PRIORITY]  # after the DMN hook (10)
    assert not ours[0].matcher.block  # later handlers still run
    await memory.memos.replace("QQPlatform_Private_10001", "用户叫小明，住在杭州")
    await memory.memos.replace("QQPlatform_Group_555", "本群是摄影群")

    def history() -> list[Any]:
        return [
            Message[str](role="user", content="早"),
            Message[str](role="assistant", content="早上好"),
            Message[str](role="user", content="你好"),
        ]

    private = await trigger(chat_object("10001"), history())
    messages = private.message.unwrap()
    assert messages[0].content == "你是一个助手"  # the preset's system prompt stays first
    assert messages[1].role == "system"
    assert messages[1].content.startswith(MEMO_HEADER)
    assert "用户叫小明，住在杭州" in messages[1].content
    assert [m.content for m in messages[2:]] == ["早", "早上好", "你好"]

    group = await trigger(chat_object("10001", "555"), history())
    block = group.message.unwrap()[1].content
    assert "本群是摄影群" in block
    assert "小明" not in block  # group chat: the group memo (personal one only if configured)

    nobody = await trigger(chat_object("30003"), history())  # empty memo: nothing added
    assert [m.content for m in nobody.message.unwrap()] == ["你是一个助手", "早", "早上好", "你好"]
    outside = await trigger(chat_object(None), history())  # no bot context: nothing
    assert len(outside.message.unwrap()) == 4

    # the next turn's history still holds this turn's block: it is replaced, not stacked
    carried = [*private.message.memory, private.message.user_query]
    again = await trigger(chat_object("10001"), carried)
    blocks = [m for m in again.message.unwrap() if m.role == "system"][1:]
    assert len(blocks) == 1


async def test_global_tools_manager_takes_over_existing_names(memory: Memory) -> None:
    global_manager = ToolsManager()
    adapter = AmritaMemory(memory, resolver=speaker)
    assert adapter.manager is global_manager
    try:
        adapter.register_tools()
        adapter.register_tools()  # a restart (or the old plugin's names) is replaced, not an error
        assert global_manager.has_tool("write_memory")
        with pytest.raises(ValueError, match="already exists"):
            adapter.register_tools(replace=False)
    finally:
        adapter.unregister_tools()
    assert not global_manager.has_tool("write_memory")
