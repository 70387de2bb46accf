"""Migration 0006 on a store written by the previous release: the rows survive the new
primary keys both ways, and the dimension the old release never recorded is filled in
when the stored vectors agree on one."""

from __future__ import annotations

import asyncpg
import pytest

from amrita_memory_pg.storage.pg import migrate

BEFORE = "0005_search_v2"
INSERT = """
INSERT INTO amrita_memory.memory (partition_key, scope, content, importance, embedding, embed_fingerprint)
VALUES ($1, 'user', $2, 5, $3::vector, 'fp')
"""


async def _fill(dsn: str, dims: list[int]) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("UPDATE amrita_memory.store_meta SET embed_fingerprint = 'fp'")
        for i, dim in enumerate(dims):
            vector = "[" + ",".join(["1"] * dim) + "]"
            await conn.execute(INSERT, f"QQPlatform_Private_{i % 2}", f"m{i}", vector)
        await conn.execute(
            "INSERT INTO amrita_memory.chat_log (session_key, user_id, role, text) "
            "VALUES ('QQPlatform_Group_1', '1', 'user', '早')"
        )
    finally:
        await conn.close()


async def _state(dsn: str) -> tuple[int | None, int, int, list[str]]:
    conn = await asyncpg.connect(dsn)
    try:
        dim = await conn.fetchval("SELECT embed_dim FROM amrita_memory.store_meta")
        memories = await conn.fetchval("SELECT count(*) FROM amrita_memory.memory")
        lines = await conn.fetchval("SELECT count(*) FROM amrita_memory.chat_log")
        pk = await conn.fetchval(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'pk_memory'"
        )
        return dim, memories, lines, [pk]
    finally:
        await conn.close()


@pytest.mark.parametrize(("dims", "recorded"), [([8, 8, 8], 8), ([8, 8, 12], None)])
async def test_upgrade_records_a_uniform_dimension_and_keeps_every_row(
    empty_db_dsn: str, dims: list[int], recorded: int | None
) -> None:
    await migrate.upgrade(empty_db_dsn, BEFORE)
    await _fill(empty_db_dsn, dims)
    assert await _state(empty_db_dsn) == (None, 3, 1, ["PRIMARY KEY (id)"])

    await migrate.upgrade(empty_db_dsn)
    assert await _state(empty_db_dsn) == (recorded, 3, 1, ["PRIMARY KEY (partition_key, id)"])

    await migrate.downgrade(empty_db_dsn, BEFORE)
    assert await _state(empty_db_dsn) == (recorded, 3, 1, ["PRIMARY KEY (id)"])
