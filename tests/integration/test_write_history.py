"""insert_memory_v6 / write_memory_v5 (sql/functions/memory.sql) write the create history
row as a plain INSERT from their arguments: the memory row and the history row must be
exactly those insert_memory_v5 (the previous release's, a data-modifying CTE over the
inserted row) writes for the same arguments, whatever the actor, note, tags and category;
write_memory_v5 returns the memory and finds a retry within its window."""

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


async def test_write_memory_v5_returns_the_memory_and_finds_a_retry(
    conn: asyncpg.Connection,
) -> None:
    call = (
        "SELECT id, partition_key, scope, content, tags, importance, category, source, author,"
        " created_at, updated_at, rows_before, duplicate"
        " FROM amrita_memory.write_memory_v5($1, 'user', '每周日游泳', NULL, 6, 'event', 'auto',"
        " '42', '[0,1,0]'::vector, 'fp', $2, 100, 120, ARRAY['游泳'])"
    )
    first = dict(await conn.fetchrow(call, "P_new", NOW) or {})
    again = dict(await conn.fetchrow(call, "P_new", NOW) or {})
    assert first["id"] is not None
    assert (first["duplicate"], again["duplicate"]) == (False, True)
    assert (first["rows_before"], again["rows_before"]) == (0, 1)
    for row in (first, again):
        row.pop("duplicate"), row.pop("rows_before")
    assert again == first  # the retry is answered with the memory the first call wrote
    assert (first["partition_key"], first["content"], first["tags"], first["importance"]) == (
        "P_new",
        "每周日游泳",
        [],
        6,
    )
    assert (first["category"], first["source"], first["author"]) == ("event", "auto", "42")
    assert first["created_at"] == first["updated_at"] == NOW
    count = await conn.fetchval(
        "SELECT count(*) FROM amrita_memory.memory_change WHERE partition_key = 'P_new'"
    )
    assert count == 1
