"""The tool schemas the chat LLM sees are pinned byte for byte.

Prompts and host configurations written for the reference plugin name these tools,
their arguments, enums and defaults; a schema that drifts (a key renamed, a property
reordered, ``["string", "null"]`` turned into ``anyOf``) changes what every deployed
model is told. ``snapshots/chat_tools.json`` was generated from the hand-written
schemas before the tools moved onto pydantic models; regenerate it only on purpose.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.memory import memory_on

SNAPSHOT = Path(__file__).parent / "snapshots" / "chat_tools.json"


def render(schemas: object) -> str:
    """The schemas as JSON text with their key order intact (what an adapter sends)."""
    return json.dumps(schemas, ensure_ascii=False, indent=2) + "\n"


async def test_chat_tool_schemas_match_the_snapshot_byte_for_byte(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        text = render(mem.tool_schemas())
    assert text == SNAPSHOT.read_text(encoding="utf-8")


async def test_a_subset_of_schemas_keeps_the_order_asked_for(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        names = ["update_memo", "read_memory"]
        chosen = mem.tool_schemas(names)
    assert [s["function"]["name"] for s in chosen] == names
    pinned = {s["function"]["name"]: s for s in json.loads(SNAPSHOT.read_text(encoding="utf-8"))}
    assert render(chosen) == render([pinned[n] for n in names])
