"""The drop-in under AmritaBot, with amrita-core really installed: the memo hook passes the
turn's message (the relevant-memories part of the block), the L3 trigger counts the
target's completions (reference §8.2, priority 10) and a completion aborts the target's
running cycle. Hooks are fired through amrita-sense as amrita-core's pre-runner does."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from amrita_core import AmritaConfig, ChatObject, set_config
from amrita_core.hook.event import EventTypeEnum, PreCompletionEvent
from amrita_core.preset import PresetManager
from amrita_core.tools.manager import ToolsManager
from amrita_core.tools.models import (
    FunctionDefinitionSchema,
    FunctionParametersSchema,
    FunctionPropertySchema,
    ToolData,
    ToolFunctionSchema,
)
from amrita_core.types import Message, ModelPreset, SendMessageWrap, TextContent
from amrita_sense.hook.matcher import EventRegistry, MatcherFactory

from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply
from amrita_memory_pg.integrations.amrita import Installation, install
from amrita_memory_pg.integrations.amrita.adapter import TRIGGER_HOOK_PRIORITY, user_text
from amrita_memory_pg.services.scheduling import ScheduledRun
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from tests.integration.test_amrita_adapter import group_event, private_event
from tests.support.l3 import TARGET, USAGE, add, loop_memory
from tests.support.memory import memory_on


@pytest.fixture
def config() -> AmritaConfig:
    cfg = AmritaConfig()
    set_config(cfg)
    return cfg


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


def turn(event: Any, config: AmritaConfig, persona: str = "你是 Amrita") -> ChatObject:
    return ChatObject(
        train={"role": "system", "content": persona},
        user_input="hi",
        session_id="dropin-session",
        config=config,
        hook_kwargs={"amrita": {"event": event, "bot": None}},
    )


async def fire(chat: ChatObject, config: AmritaConfig, user_input: Any) -> PreCompletionEvent:
    wrap = SendMessageWrap(
        Message(role="system", content="你是 Amrita"), [], Message(role="user", content="hi")
    )
    event = PreCompletionEvent(chat_object=chat, user_input=user_input, original_context=wrap)
    await MatcherFactory.trigger_event(event, config, chat, **chat._hook_kwargs)
    return event


@pytest.fixture
def installed_with(config: AmritaConfig) -> Iterator[list[Installation]]:
    """Installations made by a test, taken out again afterwards."""
    made: list[Installation] = []
    try:
        yield made
    finally:
        for installation in made:
            installation.uninstall()


def test_user_text_reads_strings_and_content_parts() -> None:
    assert user_text("  在学 Rust  ") == "在学 Rust"
    assert (
        user_text([TextContent(type="text", text="在学"), TextContent(type="text", text="Rust")])
        == "在学\nRust"
    )
    assert user_text(None) == ""


async def test_the_memo_hook_passes_the_current_message_for_relevant_memories(
    db_dsn: str, tmp_path: Path, config: AmritaConfig, installed_with: list[Installation]
) -> None:
    async with memory_on(
        db_dsn,
        tmp_path,
        injection__enabled=True,
        injection__relevant_top_k=1,
        injection__inject_token_budget=200,
    ) as mem:
        installed_with.append(install(mem))
        await add(mem, "喜欢猫", importance=3)
        await add(mem, "在学 Rust 编程", importance=3)
        event = await fire(turn(private_event(), config), config, "在学 Rust 编程")
        block = event.message.memory[0].content
        assert "### 与当前消息相关\n- [个人][3] 在学 Rust 编程" in block
        # without a message there is no relevant part (what the hook did before)
        event = await fire(turn(private_event(), config), config, None)
        assert "与当前消息相关" not in event.message.memory[0].content


async def test_the_l3_trigger_counts_the_targets_completions_in_any_chat(
    db_dsn: str,
    tmp_path: Path,
    config: AmritaConfig,
    llm: ScriptedLLM,
    installed_with: list[Installation],
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        scheduled: list[ScheduledRun] = []
        installed_with.append(install(mem, l3_trigger=True, schedule=scheduled.extend))
        [trigger] = [m for m in installed_with[0].matchers if m.priority == TRIGGER_HOOK_PRIORITY]
        handlers = EventRegistry().get_handlers(EventTypeEnum.BEFORE_COMPLETION)
        assert any(h.matcher is trigger for h in handlers[TRIGGER_HOOK_PRIORITY])
        assert trigger.block is False

        await fire(turn(private_event(), config), config, "早")
        await fire(turn(group_event(), config), config, "大家好")  # the target, in a group
        await fire(turn(private_event("10002"), config), config, "hi")  # not a target
        state = await mem.scheduling.state(TARGET)
        assert state is not None and state.penalty == 2
        assert [r.target_key for r in scheduled] == [TARGET, TARGET]
        assert scheduled[-1].run_at == state.next_run_at


async def test_a_completion_of_the_target_aborts_its_running_cycle(
    db_dsn: str,
    tmp_path: Path,
    config: AmritaConfig,
    llm: ScriptedLLM,
    installed_with: list[Installation],
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        installed_with.append(install(mem, l3_trigger=True))
        # amrita-core has no preset here: the configured endpoint carries the loop
        assert (
            await mem.loop_model_label()
            == "stub-model（配置的端点 LLM_*；amrita-core 没有设置默认模型预设）"
        )
        kept = await add(mem, "用户住在上海")
        llm.call("subconscious_get_memory_stats", {})
        llm.call("subconscious_delete_memory", {"id": kept})
        llm.delay_seconds = 0.3
        task = asyncio.create_task(mem.run_cycle_and_plan(TARGET))
        for _ in range(200):
            if len(llm.requests) >= 2:
                break
            await asyncio.sleep(0.02)
        await fire(turn(private_event(), config), config, "在吗")
        summary, _next = await task
        assert summary.aborted, summary
        assert await mem.memories.get(TARGET, kept) is not None
        state = await mem.scheduling.state(TARGET)
        assert state is not None and state.penalty == 1 and state.runs == 0
        assert datetime.now(UTC) < (state.next_run_at or datetime.now(UTC).replace(year=2000))


async def test_amritabots_persona_reaches_the_rendered_cycle_prompt(
    db_dsn: str,
    tmp_path: Path,
    config: AmritaConfig,
    llm: ScriptedLLM,
    installed_with: list[Installation],
) -> None:
    """No persona configured: the host's (the system prompt of AmritaBot's private
    turns, seen by the memo hook) fills the templates' character_prompt."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        installed_with.append(install(mem))
        assert mem.prompts.character_prompt == ""
        await fire(turn(private_event(), config, persona="你是 Amrita，说话带喵。"), config, "早")
        await fire(turn(group_event(), config, persona="群聊人设"), config, "早")  # not private
        llm.call("subconscious_iter_stop", {"summary": "无事"})
        assert (await mem.run_cycle(TARGET)).ok
        system = llm.requests[0]["messages"][0]["content"]
        assert "你是 Amrita，说话带喵。" in system and "群聊人设" not in system


@pytest.fixture
def host_llm() -> Iterator[ScriptedLLM]:
    """The host's model when amrita-core runs without AmritaBot (someone's own agent): a
    second stub, registered as amrita-core's default preset. (AmritaBot keeps its presets
    in its own files, never in this registry: tests/amritabot runs the real host.)"""
    manager = PresetManager()
    before = manager._default_preset
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        preset = ModelPreset(
            name="dropin-host", model="host-model", base_url=stub.base_url, api_key="sk-host"
        )
        manager.add_preset(preset)
        manager.set_default_preset(preset)
        try:
            yield stub
        finally:
            manager._presets.pop("dropin-host", None)
            manager._default_preset = before


async def test_on_amrita_core_alone_the_loop_calls_its_default_preset(
    db_dsn: str,
    tmp_path: Path,
    llm: ScriptedLLM,
    host_llm: ScriptedLLM,
    installed_with: list[Installation],
) -> None:
    """The configured LLM_* endpoint (``llm``) is not called: the cycle goes to the
    preset's endpoint with its model and key, and /memory dmn says so."""
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        assert await mem.loop_model_label() == "stub-model（配置的端点 LLM_*）"
        installed_with.append(install(mem))
        assert (
            await mem.loop_model_label() == "host-model（amrita-core 的默认模型预设 dropin-host）"
        )
        host_llm.call("subconscious_iter_stop", {"summary": "宿主模型整理"})
        command = MemoryCommand.over(mem, cycle_run=mem.run_cycle, loop_model=mem.loop_model_label)
        admin = ToolContext(platform="qq", user_id="1", roles=frozenset({"superuser"}))
        reply = await command.run(admin, "dmn")
        assert isinstance(reply, TextReply)
        lines = reply.text.splitlines()
        assert lines[0] == "✅ 潜意识整理完成"
        assert lines[1] == "模型：host-model（amrita-core 的默认模型预设 dropin-host）"
        assert llm.requests == []
        [request] = host_llm.requests
        assert request["model"] == "host-model"
        assert host_llm.request_headers[0]["authorization"] == "Bearer sk-host"
        usage = await mem.pool.fetch("SELECT model FROM amrita_memory.token_usage")
        assert [u["model"] for u in usage] == ["host-model"]


async def test_the_loops_own_endpoint_overrides_the_hosts_preset(
    db_dsn: str,
    tmp_path: Path,
    llm: ScriptedLLM,
    host_llm: ScriptedLLM,
    installed_with: list[Installation],
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm, subconscious__llm_model="loop-model") as mem:
        installed_with.append(install(mem))
        assert await mem.loop_model_label() == "loop-model（配置的端点 [subconscious] llm_*）"
        llm.call("subconscious_iter_stop", {"summary": "自己的模型"})
        assert (await mem.run_cycle(TARGET)).ok
        assert host_llm.requests == [] and llm.requests[0]["model"] == "loop-model"


async def test_allowed_tools_lend_another_plugins_tool_from_amrita_cores_registry(
    db_dsn: str,
    tmp_path: Path,
    llm: ScriptedLLM,
    installed_with: list[Installation],
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[dict[str, Any]] = []

    async def weather(args: dict[str, Any]) -> str:
        calls.append(args)
        return f"{args['city']}：晴，25°C"

    manager = ToolsManager()
    manager.register_tool(
        ToolData(
            data=ToolFunctionSchema(
                type="function",
                function=FunctionDefinitionSchema(
                    name="dropin_weather",
                    description="查天气（另一个插件的只读工具）",
                    parameters=FunctionParametersSchema(
                        type="object",
                        properties={
                            "city": FunctionPropertySchema(type="string", description="城市")
                        },
                        required=["city"],
                    ),
                ),
            ),
            func=weather,
        )
    )
    try:
        async with loop_memory(
            db_dsn, tmp_path, llm, subconscious__allowed_tools=["dropin_weather", "nope"]
        ) as mem:
            with caplog.at_level(logging.WARNING, logger="amrita_memory_pg"):
                installed_with.append(install(mem))
            # the start-up check comes after the host's tools are lent: only "nope" is unknown
            not_found = [r.getMessage() for r in caplog.records if "not found" in r.getMessage()]
            assert len(not_found) == 1 and "'nope'" in not_found[0], not_found
            llm.call("dropin_weather", {"city": "上海"})
            llm.call("subconscious_iter_stop", {"summary": "查了天气"})
            assert (await mem.run_cycle(TARGET)).ok
            offered = [t["function"]["name"] for t in llm.requests[0]["tools"]]
            assert "dropin_weather" in offered and "nope" not in offered
            assert calls == [{"city": "上海"}]
            last = llm.requests[1]["messages"][-1]
            assert last["role"] == "tool" and last["content"] == "上海：晴，25°C"
    finally:
        manager.remove_tool("dropin_weather")
