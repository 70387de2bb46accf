"""Vectors stay in the row (sql/tables.sql): a realistic memory — 33 Chinese characters with
their search tokens and a 768-d halfvec (or a 384-d vector, before halfvec), a 2.3 KB row —
would have its vector moved to the TOAST table by default (pgvector's EXTERNAL storage,
toasting from 2 KB on), and every search would fetch each vector back through the TOAST
index. A row is toasted only past a page, text first; a vector too big for a page is still
stored (out of line)."""

from __future__ import annotations

import asyncpg
import pytest

from amrita_memory_pg.domain.tokens import search_tokens

#: 33 characters of a real memory's length (its tokens are ~550 B of bigrams)
TEXT = "用户每周日早上去游泳，之后会在附近的咖啡店吃早餐，通常点拿铁和可颂面包"
#: a $3-dimensional vector that does not compress (a constant one would, inline), stored
#: as halfvec (2 bytes a dimension)
VECTOR = "array(SELECT sin(g)::real FROM generate_series(1, $3::int) g)::vector"


async def _insert(conn: asyncpg.Connection, table: str, key: str, dim: int, body: str) -> None:
    if table == "memory":
        await conn.execute(
            "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance,"
            " embedding, embed_fingerprint, search_tokens)"
            f" VALUES ($1, 'user', $2, 5, {VECTOR}, 'fp',"
            "         array_to_tsvector($4::text[]))",
            key, body, dim, search_tokens(body),
        )  # fmt: skip
    else:
        await conn.execute(
            "INSERT INTO amrita_memory.knowledge (kid, title, summary, body, embedding,"
            " embed_fingerprint)"
            f" VALUES ($1, $1, '', $2, {VECTOR}, 'fp')",
            key, body, dim,
        )  # fmt: skip


async def _out_of_line(conn: asyncpg.Connection, table: str, key: str, column: str) -> bool:
    where = "partition_key" if table == "memory" else "kid"
    value = await conn.fetchval(
        f"SELECT pg_column_toast_chunk_id({column}) IS NOT NULL"
        f" FROM amrita_memory.{table} WHERE {where} = $1",
        key,
    )
    assert value is not None
    return bool(value)


@pytest.mark.parametrize("dim", [768, 2048])
async def test_a_realistic_memory_keeps_its_vector_in_the_row(
    conn: asyncpg.Connection, dim: int
) -> None:
    await _insert(conn, "memory", f"P{dim}", dim, TEXT)
    size = await conn.fetchval(
        "SELECT pg_column_size(m.*) FROM amrita_memory.memory m WHERE partition_key = $1",
        f"P{dim}",
    )
    assert size > 2100  # over the default toasting threshold: this is the case in question
    assert not await _out_of_line(conn, "memory", f"P{dim}", "embedding")
    assert not await _out_of_line(conn, "memory", f"P{dim}", "search_tokens")


async def test_a_row_over_a_page_moves_its_text_out_first_and_a_huge_vector_still_fits(
    conn: asyncpg.Connection,
) -> None:
    # ~12 KB of text that does not compress, with a 1024-d vector
    long_body = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(4000))
    await _insert(conn, "knowledge", "0123abcd", 1024, long_body)
    assert await _out_of_line(conn, "knowledge", "0123abcd", "body")
    assert not await _out_of_line(conn, "knowledge", "0123abcd", "embedding")
    await _insert(conn, "memory", "P6144", 6144, TEXT)  # 12 KB of halfvec: cannot fit a page
    assert await _out_of_line(conn, "memory", "P6144", "embedding")


async def test_a_vector_stored_out_of_line_comes_back_inline_when_rewritten(
    conn: asyncpg.Connection,
) -> None:
    """Rows written under pgvector's defaults (EXTERNAL, toasting from 2 KB: a database of a
    release before these settings) keep their out-of-line vectors until rewritten: a
    re-embed (a new vector) or VACUUM FULL (docs/operations.md) stores them by the rules."""
    await conn.execute(
        "ALTER TABLE amrita_memory.memory RESET (toast_tuple_target);"
        " ALTER TABLE amrita_memory.memory ALTER COLUMN embedding SET STORAGE EXTERNAL"
    )
    for key in ("old", "reembedded"):
        await _insert(conn, "memory", key, 768, TEXT)
        assert await _out_of_line(conn, "memory", key, "embedding")  # what the rules avoid
    await conn.execute(
        "ALTER TABLE amrita_memory.memory SET (toast_tuple_target = 8160);"
        " ALTER TABLE amrita_memory.memory ALTER COLUMN embedding SET STORAGE MAIN"
    )
    assert await _out_of_line(conn, "memory", "old", "embedding")  # kept until rewritten
    await conn.execute(
        "UPDATE amrita_memory.memory SET embedding ="
        " array(SELECT cos(g)::real FROM generate_series(1, 768) g)::vector"
        " WHERE partition_key = 'reembedded'"
    )
    assert not await _out_of_line(conn, "memory", "reembedded", "embedding")
    assert await _out_of_line(conn, "memory", "old", "embedding")
    await conn.execute("VACUUM FULL amrita_memory.memory")
    assert not await _out_of_line(conn, "memory", "old", "embedding")
