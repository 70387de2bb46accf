"""Text the database cannot store and numbers past int64 never reach the driver.

Before: ``write_memory`` with a NUL in its content answered «写入记忆失败: invalid byte
sequence for encoding "UTF8": 0x00», ``list_memory`` with a huge offset «列出记忆失败:
value out of int64 range», each with an ERROR traceback in the log, and a lone
surrogate failed inside the driver's encoder. Now each is refused up front with a
sentence naming the argument, nothing is written, and nothing is logged as an error.
The arguments also arrive as JSON text (``"\\u0000"``, ``"\\ud800"``), as from an LLM.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import checksum, memory_on

ALICE = ToolContext(platform="qq", user_id="10001")
ALICE_IN_GROUP = ToolContext(platform="qq", user_id="10001", group_id="555")

NUL_REASON = "含有 NUL 字符"
SURROGATE_REASON = "含有孤立的代理字符"
INT64_REASON = "超出 64 位整数范围"


@pytest.fixture
async def mem(db_dsn: str, tmp_path: Path) -> AsyncIterator[Memory]:
    async with memory_on(db_dsn, tmp_path) as memory:
        yield memory


async def seeded(mem: Memory) -> str:
    """One memory and one memo to aim updates at; returns the memory's id."""
    reply = json.loads(
        await mem.call_tool(
            "write_memory",
            {"content": "原来的内容", "tags": "t", "importance": "low", "scope": "user"},
            ALICE,
        )
    )
    assert reply["status"] == "success", reply
    assert json.loads(await mem.call_tool("update_memo", {"content": "原来的备忘录"}, ALICE))[
        "status"
    ] == ("success")
    return str(reply["memory_id"])


def _write(**over: Any) -> dict[str, Any]:
    return {"content": "x", "tags": "t", "importance": "low", "scope": "user", **over}


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("write_memory", _write(content="我喜欢\x00猫"), "content", NUL_REASON),
    ("write_memory", _write(content="我喜欢\ud800猫"), "content", SURROGATE_REASON),
    ("write_memory", _write(tags="a\x00"), "tags", NUL_REASON),
    ("write_memory", _write(tags="\udfff"), "tags", SURROGATE_REASON),
    ("update_memory", {"id": "{id}", "scope": "user", "content": "新\x00"}, "content", NUL_REASON),
    ("update_memory", {"id": "{id}", "scope": "user", "tags": "\ud83d"}, "tags", SURROGATE_REASON),
    ("update_memory", {"id": "{id}\x00", "scope": "user", "content": "新"}, "id", NUL_REASON),
    ("delete_memory", {"id": "\x00", "scope": "user"}, "id", NUL_REASON),
    ("read_memory", {"query": "猫\x00", "scope": "user"}, "query", NUL_REASON),
    ("read_memory", {"query": "\ud800", "scope": "user"}, "query", SURROGATE_REASON),
    ("read_memory", {"query": "猫", "scope": "user", "tags": "\x00"}, "tags", NUL_REASON),
    ("read_memory", {"query": "猫", "scope": "user", "top_k": 10**30}, "top_k", INT64_REASON),
    ("list_memory", {"scope": "user", "offset": 10**20}, "offset", INT64_REASON),
    ("list_memory", {"scope": "user", "offset": "9" * 30}, "offset", INT64_REASON),
    ("list_memory", {"scope": "user", "offset": 1e30}, "offset", INT64_REASON),
    ("list_memory", {"scope": "user", "limit": -(2**64)}, "limit", INT64_REASON),
    ("list_memory", {"scope": "user", "offset": "²"}, "offset", "应为整数"),
    ("append_memo", {"content": "追加\x00"}, "content", NUL_REASON),
    ("append_memo", {"content": "\udc00"}, "content", SURROGATE_REASON),
    ("update_memo", {"content": "\x00"}, "content", NUL_REASON),
    ("update_memo", {"content": "全文\ud800"}, "content", SURROGATE_REASON),
]


def _fill(args: dict[str, Any], memory_id: str) -> dict[str, Any]:
    return {k: v.replace("{id}", memory_id) if isinstance(v, str) else v for k, v in args.items()}


@pytest.mark.parametrize("as_json_text", [False, True], ids=["mapping", "json-text"])
async def test_unstorable_text_and_int64_overflow_are_refused_before_the_driver(
    mem: Memory, caplog: pytest.LogCaptureFixture, as_json_text: bool
) -> None:
    memory_id = await seeded(mem)
    before = await checksum(mem)
    caplog.set_level(logging.DEBUG)
    for tool, args, argument, reason in CASES:
        filled = _fill(args, memory_id)
        # JSON text escapes NUL and surrogates as \u0000 / \ud800, as an LLM sends them
        payload: Any = json.dumps(filled) if as_json_text else filled
        reply = await mem.call_tool(tool, payload, ALICE)
        reply.encode("utf-8")  # the reply itself is sendable
        data = json.loads(reply)
        assert data["status"] == "error", (tool, filled, data)
        assert data["message"].startswith(f"{tool} 的参数 {argument} {reason}"), data["message"]
        assert "invalid byte sequence" not in data["message"]
        assert "int64 range" not in data["message"]
    assert await checksum(mem) == before
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert errors == [], [r.getMessage() for r in errors]


async def test_the_same_calls_without_the_bad_character_succeed(mem: Memory) -> None:
    """The refusals above are about the character or the number, not the call."""
    memory_id = await seeded(mem)
    ok = [
        ("write_memory", _write(content="我喜欢猫 😀 '; DROP TABLE x; --")),
        ("update_memory", {"id": memory_id, "scope": "user", "content": "新"}),
        ("read_memory", {"query": "猫", "scope": "user", "top_k": 2**63 - 1}),
        ("list_memory", {"scope": "user", "offset": 2**63 - 1}),
        ("list_memory", {"scope": "user", "offset": "  3 "}),
        ("append_memo", {"content": "追加 🐱"}),
    ]
    for tool, args in ok:
        data = json.loads(await mem.call_tool(tool, args, ALICE))
        assert data["status"] == "success", (tool, data)
    page = json.loads(
        await mem.call_tool("list_memory", {"scope": "user", "offset": 2**63 - 1}, ALICE)
    )
    assert (page["memories"], page["total"], page["offset"]) == ([], 2, 2**63 - 1)
    assert page["has_more"] is False and page["next_offset"] is None
    stored = await mem.pool.fetchval(
        "SELECT content FROM amrita_memory.memory WHERE id = $1", memory_id
    )
    assert stored == "新"


async def test_a_memo_over_the_cap_is_refused_without_sending_it_to_the_database(
    mem: Memory,
) -> None:
    await seeded(mem)  # the memo holds 6 characters
    huge = "长" * 200_000
    replace = json.loads(await mem.call_tool("update_memo", {"content": huge}, ALICE))
    assert replace == {
        "status": "error",
        "message": "备忘录长度 200000 超过上限 1000，请压缩后重试（当前备忘录 6 字，上限 1000 字）",
        "current_chars": 6,
        "max_chars": 1000,
    }
    append = json.loads(await mem.call_tool("append_memo", {"content": huge}, ALICE))
    assert append["message"].startswith("备忘录长度 200007 超过上限 1000")  # 6 + "\n" + 200000
    assert (await mem.memos.get(ALICE.personal_key)).content == "原来的备忘录"


async def test_unknown_tool_names_and_argument_names_are_echoed_safely(mem: Memory) -> None:
    unknown_tool = json.loads(await mem.call_tool("read\x00memo", {}, ALICE))
    assert unknown_tool["message"].startswith("未知工具 'read\\x00memo'；可用工具: write_memory")
    unknown_arg = await mem.call_tool("read_memo", {"a\ud800": 1, "x" * 500: 2}, ALICE)
    unknown_arg.encode("utf-8")
    message = json.loads(unknown_arg)["message"]
    assert message.startswith("read_memo 不接受参数 'a\\ud800', ")
    assert len(message) < 200


async def test_registries_are_composed_per_audience(db_dsn: str, tmp_path: Path) -> None:
    chat = [
        "write_memory",
        "read_memory",
        "update_memory",
        "delete_memory",
        "list_memory",
        "read_memo",
        "append_memo",
        "update_memo",
        "knowledge_list",
        "knowledge_read",
        "knowledge_search",
        "knowledge_suggest",
        "read_profile",
        "memory_load_context",
        "memory_unload_context",
        "forget_memory",
    ]
    async with memory_on(db_dsn, tmp_path) as plain:
        assert list(plain.registries) == ["chat"]
        assert plain.tools is plain.registries["chat"]
        assert plain.tools.offered_names() == chat
        # Monstrum's names are callable too, not offered (tool_names = reference)
        assert set(plain.tools.names()) == {*chat, "memory_write", "memory_delete"}
    async with memory_on(db_dsn, tmp_path, subconscious__enabled=True) as with_l3:
        assert list(with_l3.registries) == ["chat", "consolidation"]
        loop = with_l3.registries["consolidation"]
        assert loop.audience == "consolidation" and len(loop) >= 16
        assert all(name.startswith("subconscious_") for name in loop.names())
        assert not set(loop.names()) & set(chat)
        assert with_l3.tools.offered_names() == chat
        # a chat tool is not callable through the loop's registry
        refused = json.loads(await loop.call("write_memory", _write(), ALICE_IN_GROUP))
        assert refused["status"] == "error"
        assert refused["message"].startswith("未知工具 write_memory；可用工具: subconscious_")
        assert {"subconscious_get_profile", "subconscious_update_profile"} <= set(loop.names())
