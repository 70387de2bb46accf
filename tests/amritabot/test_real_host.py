"""This plugin inside the real AmritaBot: loaded by its plugin manager, chatting through its
chat plugin and amrita-core, its L3 loop on the host's own model preset."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from amrita_memory_pg.integrations.nonebot import PLUGIN
from amrita_memory_pg.tools.context import ToolContext
from tests.amritabot.conftest import Host
from tests.amritabot.host import (
    HOST_KEY,
    HOST_MODEL,
    OTHER_TOOL,
    PERSONA,
    PRESET_NAME,
    SUPERUSER,
    TARGET,
    TARGET_QQ,
    private_event,
)
from tests.support.reference import REFERENCE_TOOLS

SNAPSHOT = Path(__file__).parents[1] / "contract" / "snapshots" / "chat_tools.json"
TARGET_CTX = ToolContext(platform="qq", user_id=str(TARGET_QQ))


def tool_schemas(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in request.get("tools") or []}


async def test_amritas_plugin_manager_loads_it_and_lists_it_as_amrita_memory_pg(
    host: Host,
) -> None:
    import nonebot
    from amrita.utils.plugin_state import PluginSnapshot, PluginState

    plugin = nonebot.get_plugin("amrita_memory_pg")
    assert plugin is not None and plugin.module_name == PLUGIN
    ids = {p.id_ for p in nonebot.get_loaded_plugins()}
    assert "nonebot" not in ids and not any(i.endswith(":amrita_memory_pg") for i in ids)
    # the host's own view of its plugins (its web UI's plugin page)
    assert PluginSnapshot.capture().state_of(PLUGIN) is PluginState.RUNNING
    assert any('Succeeded to load plugin "amrita_memory_pg"' in line for line in host.log)


async def test_a_chat_turn_offers_our_tools_from_amritas_registry_and_injects_the_memo(
    host: Host,
) -> None:
    memory = host.runtime.require()
    await memory.call_tool("update_memo", {"content": "用户叫小明，住在杭州"}, TARGET_CTX)
    host.llm.chat_call(
        "write_memory",
        {"content": "喜欢猫", "tags": "pet", "importance": "medium", "scope": "user"},
    )
    await host.send(private_event("我喜欢猫"))

    first = host.llm.chat_requests[0]
    assert first["model"] == HOST_MODEL
    offered = tool_schemas(first)
    # AmritaBot's own tools and ours, side by side in the host's registry
    assert {"read_context", *REFERENCE_TOOLS} <= set(offered)
    reference = {s["function"]["name"]: s["function"] for s in json.loads(SNAPSHOT.read_text())}
    for name in REFERENCE_TOOLS:
        ours, sent = reference[name], offered[name]
        assert sent["description"] == ours["description"], name
        sent_params, our_params = sent["parameters"], ours["parameters"]
        assert sent_params["required"] == our_params["required"], name
        assert set(sent_params["properties"]) == set(our_params["properties"]), name
        for arg, schema in our_params["properties"].items():
            assert sent_params["properties"][arg]["type"] == schema["type"], (name, arg)
            if "enum" in schema:
                enum = [v for v in schema["enum"] if v is not None]
                assert sent_params["properties"][arg]["enum"] == enum, (name, arg)
    # the memo block, right after AmritaBot's system prompt
    messages = first["messages"]
    assert messages[0]["role"] == "system" and PERSONA in messages[0]["content"]
    assert messages[1]["role"] == "system" and "用户叫小明，住在杭州" in messages[1]["content"]
    assert "<MEMO>" in messages[1]["content"]
    # the model's tool call ran our tool for the speaker, and the reply went to QQ
    [row] = await memory.pool.fetch(
        "SELECT content, origin FROM amrita_memory.memory WHERE partition_key = $1", TARGET
    )
    assert (row["content"], row["origin"]) == ("喜欢猫", "llm")
    tool_reply = json.loads(host.llm.chat_requests[1]["messages"][-1]["content"])
    assert tool_reply["status"] == "success"
    assert host.qq.texts() == ["好的喵"]
    # the memo is not left in AmritaBot's stored history
    history = json.dumps(host.llm.chat_requests[-1]["messages"], ensure_ascii=False)
    await host.send(private_event("还记得吗"))
    again = host.llm.chat_requests[-1]["messages"]
    assert sum("用户叫小明" in json.dumps(m, ensure_ascii=False) for m in again) == 1, history


async def test_monstrums_names_are_in_amritas_registry_and_run(host: Host) -> None:
    """tool_names = both in this bot: a Monstrum-style prompt's tools reach the model."""
    memory = host.runtime.require()
    host.llm.chat_call("memory_write", {"content": "喜欢狗", "scope": "user"})
    await host.send(private_event("我喜欢狗"))
    offered = tool_schemas(host.llm.chat_requests[0])
    assert {"memory_write", "memory_delete", *REFERENCE_TOOLS} <= set(offered)
    assert offered["memory_write"]["parameters"]["required"] == ["scope"]
    reply = json.loads(host.llm.chat_requests[1]["messages"][-1]["content"])
    assert reply["status"] == "success", reply
    [row] = await memory.pool.fetch(
        "SELECT id, content FROM amrita_memory.memory WHERE partition_key = $1", TARGET
    )
    assert row["content"] == "喜欢狗"
    # a refusal names the tool the model called (amrita-core checks the schema first: a
    # missing required argument is its own «ERR: …»; what the schema allows is ours)
    host.llm.chat_call("memory_write", {"scope": "user"})
    await host.send(private_event("再记一条"))
    error = json.loads(host.llm.chat_requests[-2]["messages"][-1]["content"])
    assert error["status"] == "error"
    assert error["message"].startswith("调用 memory_write 写入新记忆时必须带有 content 参数")
    host.llm.chat_call("memory_delete", {"id": row["id"], "scope": "user"})
    await host.send(private_event("忘了吧"))
    deleted = json.loads(host.llm.chat_requests[-2]["messages"][-1]["content"])
    assert deleted == {"status": "success", "message": "记忆删除成功", "id": row["id"]}


async def dmn(host: Host) -> list[str]:
    """``/memory dmn`` from the superuser: one cycle for the target now; the reply's lines."""
    await host.send(private_event("/memory dmn", user_id=SUPERUSER))
    [reply] = host.qq.texts()
    return reply.splitlines()


async def test_memory_dmn_runs_a_cycle_on_the_hosts_preset_with_the_hosts_persona(
    host: Host,
) -> None:
    memory = host.runtime.require()
    await memory.memories.add(partition_key=TARGET, scope="user", content="用户住在上海")
    host.llm.call("subconscious_iter_stop", {"summary": "看过了"})
    lines = await dmn(host)
    assert lines[0] == "✅ 潜意识整理完成", lines
    named = f"{HOST_MODEL}（AmritaBot 的模型预设 {PRESET_NAME}）"
    assert lines[1] == f"模型：{named}"
    # the cycle's call went to the preset's base URL (this stub), with its model and key
    [request] = host.llm.loop_requests
    assert request["model"] == HOST_MODEL
    assert host.llm.loop_headers[0]["authorization"] == f"Bearer {HOST_KEY}"
    assert host.llm.chat_requests == []
    # the persona is AmritaBot's private persona file
    assert PERSONA in request["messages"][0]["content"]
    usage = await memory.pool.fetch("SELECT model FROM amrita_memory.token_usage")
    assert [u["model"] for u in usage] == [HOST_MODEL]
    # the start-up line named the same model
    assert f"L3 loop model: {named}" in host.log


async def test_the_loop_sends_its_proactive_message_through_the_bot(host: Host) -> None:
    host.llm.call("subconscious_send_to_user", {"intent": "问候"})
    host.llm.say("早安喵，今天也要加油")
    host.llm.call("subconscious_iter_stop", {"summary": "问候了用户"})
    lines = await dmn(host)
    assert lines[0] == "✅ 潜意识整理完成", lines
    assert host.qq.sent("send_private_msg") == [
        {"user_id": TARGET_QQ, "message": "早安喵，今天也要加油"}
    ]


async def test_a_chat_turn_of_the_target_aborts_its_running_cycle(host: Host) -> None:
    memory = host.runtime.require()
    kept = await memory.memories.add(partition_key=TARGET, scope="user", content="用户养了一只猫")
    host.llm.call("subconscious_get_memory_stats", {})
    host.llm.call("subconscious_delete_memory", {"id": kept.id})
    host.llm.delay_seconds = 0.3
    cycle = asyncio.create_task(memory.run_cycle_and_plan(TARGET))
    for _ in range(200):
        if host.llm.loop_requests:
            break
        await asyncio.sleep(0.02)
    await host.send(private_event("在吗"))  # AmritaBot answers it; our hook sees the turn
    summary, _next = await cycle
    assert summary.aborted, summary
    assert host.qq.texts() == ["好的喵"]
    assert await memory.memories.get(TARGET, kept.id) is not None


async def test_another_plugins_tool_in_allowed_tools_is_lent_to_the_loop(host: Host) -> None:
    assert not any(f"'{OTHER_TOOL}' not found" in line for line in host.log)
    host.llm.call(OTHER_TOOL, {"city": "上海"})
    host.llm.call("subconscious_iter_stop", {"summary": "查了天气"})
    lines = await dmn(host)
    assert lines[0] == "✅ 潜意识整理完成", lines
    first, second = host.llm.loop_requests
    assert OTHER_TOOL in tool_schemas(first)
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": second["messages"][-2]["tool_calls"][0]["id"],
        "content": "上海：晴，25°C",
    }


async def test_a_model_switch_applies_to_the_next_call_and_a_placeholder_is_named(
    host: Host,
) -> None:
    """/model switch (AmritaBot's command) to the placeholder preset a fresh install has:
    the loop says plainly that no model is configured and how to set one."""
    memory = host.runtime.require()
    await host.send(private_event("/model switch default", user_id=SUPERUSER))
    assert host.qq.texts()[-1].startswith("✅ 已切换到：default"), host.qq.texts()
    try:
        await host_chats_with("default")
        label = await memory.loop_model_label()
        assert label.startswith(
            "未配置：AmritaBot 的模型预设 default 没有填写 base_url 与 api_key。"
        )
        assert "[subconscious] llm_base_url 与 llm_model" in label
        host.qq.calls.clear()
        lines = await dmn(host)
        assert lines[0].startswith(
            "❌ 潜意识整理失败：没有可用的模型：AmritaBot 的模型预设 default"
        )
        assert lines[1] == f"模型：{label}"
        assert host.llm.loop_requests == []
    finally:
        await host.send(private_event(f"/model switch {PRESET_NAME}", user_id=SUPERUSER))
        await host_chats_with(PRESET_NAME)
    assert await memory.loop_model_label() == f"{HOST_MODEL}（AmritaBot 的模型预设 {PRESET_NAME}）"


async def host_chats_with(name: str) -> None:
    """Wait until AmritaBot's chat turns use preset ``name`` (its config file is re-read
    by a watcher after /model switch saves it)."""
    from amrita.plugins.chat.utils.preset import resolve_preset

    for _ in range(300):
        if (await resolve_preset()).name == name:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"AmritaBot never switched to {name}")
