"""Monstrum's chat-tool names: a Monstrum-style prompt works unchanged.

``memory_write`` writes a memory, or updates the one its ``id`` names; ``memory_delete``
deletes. ``tool_names`` picks which naming the model is offered (the reference's by
default, Monstrum's, or both); the names not offered are still accepted when called, and
each tool's errors name the tool that was called. ``memory_load_context`` /
``memory_unload_context`` are our own tool names already.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on

ALICE = ToolContext(platform="qq", user_id="10001")


async def _call(mem: Memory, name: str, args: dict[str, Any] | str) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(await mem.registries["chat"].call(name, args, ALICE))
    return reply


async def test_memory_write_writes_or_updates_and_memory_delete_deletes(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        chat = mem.registries["chat"]
        offered = {s["function"]["name"] for s in chat.schemas()}
        assert not {"memory_write", "memory_delete"} & offered  # tool_names = reference
        assert {"write_memory", "update_memory", "delete_memory"} <= offered
        assert {"memory_load_context", "memory_unload_context"} <= offered

        written = await _call(
            mem,
            "memory_write",
            {
                "content": "用户偏好简洁的回复风格",
                "tags": "style",
                "importance": "medium",
                "scope": "user",
            },
        )
        assert written["status"] == "success", written
        (row,) = await mem.pool.fetch(
            "SELECT id, content, importance FROM amrita_memory.memory WHERE partition_key = $1",
            ALICE.personal_key,
        )
        assert row["content"] == "用户偏好简洁的回复风格"

        updated = await _call(
            mem,
            "memory_write",
            json.dumps({"id": row["id"], "importance": "high", "scope": "user"}),
        )
        assert updated["status"] == "success", updated
        assert (
            await mem.pool.fetchval(
                "SELECT importance FROM amrita_memory.memory WHERE id = $1", row["id"]
            )
            == 8
        )
        assert (
            await mem.pool.fetchval(
                "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1",
                ALICE.personal_key,
            )
            == 1
        )

        bad = await _call(mem, "memory_write", "{not json")
        assert bad["status"] == "error" and "memory_write" in bad["message"]

        deleted = await _call(mem, "memory_delete", {"id": row["id"], "scope": "user"})
        assert deleted["status"] == "success", deleted
        assert (
            await mem.pool.fetchval(
                "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1",
                ALICE.personal_key,
            )
            == 0
        )


WRITE_NAMES = {"write_memory", "update_memory", "delete_memory", "memory_write", "memory_delete"}


async def test_tool_names_picks_the_naming_the_model_is_offered(
    db_dsn: str, tmp_path: Path
) -> None:
    for setting, shown in (
        ("reference", {"write_memory", "update_memory", "delete_memory"}),
        ("monstrum", {"memory_write", "memory_delete"}),
        ("both", WRITE_NAMES),
    ):
        async with memory_on(db_dsn, tmp_path / setting, tool_names=setting) as mem:
            offered = [s["function"]["name"] for s in mem.tool_schemas()]
            assert set(offered) & WRITE_NAMES == shown, setting
            assert {"read_memory", "list_memory", "read_memo"} <= set(offered)
            assert len(offered) == len(set(offered))
            # the naming not offered is still accepted: a prompt of either kind works
            for name in WRITE_NAMES - shown:
                reply = json.loads(await mem.call_tool(name, {"scope": "user"}, ALICE))
                assert "未知工具" not in reply["message"], (setting, name, reply)


async def test_memory_writes_schema_and_errors_name_memory_write(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, tool_names="monstrum") as mem:
        (schema,) = [s for s in mem.tool_schemas() if s["function"]["name"] == "memory_write"]
        parameters = schema["function"]["parameters"]
        assert parameters["required"] == ["scope"]
        assert {"id", "content", "tags", "importance", "scope", "category"} == set(
            parameters["properties"]
        )
        (delete,) = [s for s in mem.tool_schemas() if s["function"]["name"] == "memory_delete"]
        assert sorted(delete["function"]["parameters"]["required"]) == ["id", "scope"]

        no_scope = await _call(mem, "memory_write", {"content": "喜欢猫"})
        assert no_scope["status"] == "error"
        assert "memory_write" in no_scope["message"] and "scope" in no_scope["message"]
        assert "write_memory" not in no_scope["message"]
        no_content = await _call(mem, "memory_write", {"scope": "user"})
        assert "memory_write" in no_content["message"] and "content" in no_content["message"]
        written = await _call(mem, "memory_write", {"content": "喜欢猫", "scope": "user"})
        assert written["status"] == "success" and written["importance"] == "medium"
        no_change = await _call(mem, "memory_write", {"id": written["memory_id"], "scope": "user"})
        assert no_change["message"].startswith("memory_write 至少需要"), no_change
        no_id = await _call(mem, "memory_delete", {"scope": "user"})
        assert "memory_delete" in no_id["message"] and "delete_memory" not in no_id["message"]
        full = await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1",
            ALICE.personal_key,
        )
        assert full == 1
