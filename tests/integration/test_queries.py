"""Every named query under sql/queries/ prepares against the schema migrations produce."""

from __future__ import annotations

import re

import asyncpg

from amrita_memory_pg.storage.queries import catalogue


async def test_every_named_query_prepares_against_the_migrated_schema(
    conn: asyncpg.Connection,
) -> None:
    """PREPARE parses, resolves every table, column, function and operator, and infers the
    parameter types; a statement that drifted from the schema (or holds two statements)
    fails here rather than in a user's chat."""
    named = catalogue()
    # The L1 memo and the activity statements were the first converted; the rest of the
    # runtime SQL joins the same files and is covered by the same loop.
    assert {
        "get_memo",
        "get_memos",
        "append_memo",
        "write_memo",
        "record_user_message",
        "record_bot_message",
        "touch_activity",
        "get_recent_chat",
        "get_heatmap",
    } <= set(named)
    failures: dict[str, str] = {}
    for name, item in named.items():
        try:
            statement = await conn.prepare(item.sql)
        except asyncpg.PostgresError as exc:
            failures[f"{name} ({item.origin})"] = f"{type(exc).__name__}: {exc}"
            continue
        # Every $n the text uses is a typed parameter of the prepared statement.
        assert len(statement.get_parameters()) == _highest_parameter(item.sql), name
    assert failures == {}


def _highest_parameter(sql: str) -> int:
    return max((int(n) for n in re.findall(r"\$(\d+)", sql)), default=0)
