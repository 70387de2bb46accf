"""Monstrum's chat-tool names: a Monstrum-style prompt works unchanged.

``memory_write`` writes a memory, or updates the one its ``id`` names; ``memory_delete``
deletes. Both are accepted on the call and never offered in the schemas (the LLM sees each
tool once, under our name); ``memory_load_context`` / ``memory_unload_context`` are our
own tool names already.
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
        assert not {"memory_write", "memory_delete"} & offered
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
