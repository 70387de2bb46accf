"""A Memory with the L3 loop enabled, its model a ScriptedLLM over real HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.testing_llm import ScriptedLLM
from tests.support.memory import memory_on

TARGET = "QQPlatform_Private_10001"
GROUP = "QQPlatform_Group_777"
USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


@asynccontextmanager
async def loop_memory(
    dsn: str, tmp: Path, llm: ScriptedLLM, **overrides: Any
) -> AsyncIterator[Memory]:
    values: dict[str, Any] = {
        "subconscious__enabled": True,
        "subconscious__target_user_id": "10001",
        "subconscious__prompt_dir": str(tmp / "config"),
        "llm__base_url": llm.base_url,
        "llm__model": "stub-model",
        "llm__timeout_seconds": 5.0,
    }
    values.update(overrides)
    async with memory_on(dsn, tmp / "data", **values) as mem:
        yield mem


async def add(mem: Memory, content: str, *, key: str = TARGET, **kw: Any) -> str:
    record = await mem.memories.add(
        partition_key=key, scope="user" if "Private" in key else "group", content=content, **kw
    )
    return record.id


def tool_replies(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON tool replies a completions request carried, in order."""
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def cycle_row(mem: Memory, cycle_id: int, key: str = TARGET) -> dict[str, Any]:
    row = await mem.consolidation.get_cycle(key, cycle_id)
    assert row is not None
    return row


def top_level_spans(raw: bytes) -> dict[str, bytes]:
    """Each top-level member of a JSON object body as the bytes that carried it (the
    value's text exactly as sent, for byte-for-byte comparisons of requests)."""
    text = raw.decode("utf-8")
    decoder = json.JSONDecoder()
    spans: dict[str, bytes] = {}

    def skip(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    i = skip(0)
    assert text[i] == "{", "not a JSON object"
    i = skip(i + 1)
    while text[i] != "}":
        key, i = decoder.raw_decode(text, i)
        i = skip(i)
        assert text[i] == ":"
        start = skip(i + 1)
        _, end = decoder.raw_decode(text, start)
        spans[key] = text[start:end].encode("utf-8")
        i = skip(end)
        if text[i] == ",":
            i = skip(i + 1)
    return spans
