"""insert_memory_v6 / write_memory_v5 (memory_v9.sql, 0.9.0) write the create history
row as a plain INSERT from their arguments: the memory row, the history row and the
returned columns must be exactly those of insert_memory_v5 / write_memory_v4 (write_memory_v4
retired by 0047_retire_release8, installed again here by the ``retired_sql`` fixture) for the
same arguments, whatever the actor, note, tags and category."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
MEMORY = "scope, content, tags, importance, category, source, author, origin, search_tokens"
CHANGE = "at IS NOT NULL AS dated, actor_kind, actor_id, op, before, after, note"

CASES = [
    # actor, note, tags, importance, category, source, author, tokens
    ("person:7", None, None, 5, None, "user", "7", ["猫"]),
    ("llm:chat-1", "from the chat", ["爱好", "猫"], 9, "preference", "auto", None, ["猫", "爱好"]),
    ("extraction:run-3", None, [], 1, "event", "auto", None, []),
    (None, None, ["x"], 10, "knowledge", "system", None, None),
]


async def _insert(conn: asyncpg.Connection, fn: str, case: tuple[Any, ...], part: str) -> str:
    actor, note, tags, importance, category, source, author, tokens = case
    async with conn.transaction():
        await conn.execute("SELECT set_config('amrita_memory.actor', $1, true)", actor or "")
        await conn.execute("SELECT set_config('amrita_memory.note', $1, true)", note or "")
        row = await conn.fetchrow(
            f"SELECT * FROM amrita_memory.{fn}($1, 'user', '用户喜欢猫', $2, $3, $4, $5, $6,"
            " '[1,0,0]'::vector, 'fp', $7, 100, $8)",
            part, tags, importance, category, source, author, NOW, tokens,
        )  # fmt: skip
    assert row is not None and row["id"] is not None
    return str(row["id"])


async def _written(conn: asyncpg.Connection, part: str, mid: str) -> tuple[Any, ...]:
    memory = await conn.fetchrow(
        f"SELECT {MEMORY} FROM amrita_memory.memory WHERE partition_key = $1 AND id = $2",
        part,
        mid,
    )
    history = await conn.fetch(
        f"SELECT {CHANGE} FROM amrita_memory.memory_change"
        " WHERE partition_key = $1 AND memory_id = $2 ORDER BY seq",
        part,
        mid,
    )
    return dict(memory or {}), [dict(r) for r in history]


@pytest.mark.parametrize("case", CASES, ids=["person", "llm-note", "extraction", "unset"])
async def test_the_plain_history_insert_writes_what_the_cte_wrote(
    conn: asyncpg.Connection, case: tuple[Any, ...]
) -> None:
    new = await _insert(conn, "insert_memory_v6", case, "P_new")
    old = await _insert(conn, "insert_memory_v5", case, "P_old")
    got, want = await _written(conn, "P_new", new), await _written(conn, "P_old", old)
    assert got == want
    memory, history = got
    assert [h["op"] for h in history] == ["create"]
    assert history[0]["after"] is not None and "用户喜欢猫" in history[0]["after"]
    assert memory["origin"] == history[0]["actor_kind"]


@pytest.mark.usefixtures("retired_sql")
async def test_write_memory_v5_returns_and_deduplicates_as_v4(conn: asyncpg.Connection) -> None:
    call = (
        "SELECT id IS NOT NULL AS written, partition_key, scope, content, tags, importance,"
        " category, source, author, created_at, updated_at, rows_before, duplicate"
        " FROM amrita_memory.{fn}($1, 'user', '每周日游泳', NULL, 6, 'event', 'auto', '42',"
        " '[0,1,0]'::vector, 'fp', $2, 100, 120, ARRAY['游泳'])"
    )
    results = {}
    for fn, part in (("write_memory_v5", "P_new"), ("write_memory_v4", "P_old")):
        first = dict(await conn.fetchrow(call.format(fn=fn), part, NOW) or {})
        again = dict(await conn.fetchrow(call.format(fn=fn), part, NOW) or {})
        for row in (first, again):
            row.pop("partition_key")
        results[fn] = (first, again)
    assert results["write_memory_v5"] == results["write_memory_v4"]
    first, again = results["write_memory_v5"]
    assert (first["duplicate"], again["duplicate"]) == (False, True)
    count = await conn.fetchval(
        "SELECT count(*) FROM amrita_memory.memory_change WHERE partition_key = 'P_new'"
    )
    assert count == 1
