"""Every named query under sql/queries/ prepares against the schema migrations produce."""

from __future__ import annotations

import re

import asyncpg

from amrita_memory_pg.storage.queries import catalogue, query


async def test_every_named_query_prepares_against_the_migrated_schema(
    conn: asyncpg.Connection,
) -> None:
    """PREPARE parses, resolves every table, column, function and operator, and infers the
    parameter types; a statement that drifted from the schema (or holds two statements)
    fails here rather than in a user's chat."""
    named = catalogue()
    # Every runtime statement of the package is one of these (tests/unit/
    # test_no_inline_sql.py); a sample of each area, so a lost file fails here too.
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
        "insert_memory",
        "update_memory_guarded",
        "memory_block",
        "search_memories",
        "sweep_batch",
        "chroma_candidate_rows",
        "read_store_meta",
        "export_memories",
        "clear_store",
        "reembed_switch",
        "rename_memory_partition",
        "ann_create_index_ddl",
        "status_counts",
        "create_database_ddl",
        "schema_revision",
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


async def test_ddl_built_in_sql_quotes_every_identifier_and_literal(
    conn: asyncpg.Connection,
) -> None:
    """DDL takes no parameters, so its text is built by format() in SQL: a hostile name
    or partition key stays one quoted identifier or literal, never more SQL."""
    name = 'x"; DROP TABLE amrita_memory.memory; --'
    assert await conn.fetchval(query("create_database_ddl"), name) == (
        'CREATE DATABASE "x""; DROP TABLE amrita_memory.memory; --"'
    )
    assert await conn.fetchval(query("ann_drop_index_ddl"), name) == (
        'DROP INDEX CONCURRENTLY IF EXISTS amrita_memory."x""; DROP TABLE amrita_memory.memory; --"'
    )
    ddl = await conn.fetchval(
        query("ann_create_index_ddl"), "ix_memory_ann_ab", 8, 16, 64, "k'; --"
    )
    assert ddl == (
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_memory_ann_ab ON amrita_memory.memory USING hnsw "
        "((embedding::halfvec(8)) halfvec_l2_ops) WITH (m = 16, ef_construction = 64) "
        "WHERE partition_key = 'k''; --' AND vector_dims(embedding) = 8"
    )
    assert await conn.fetchval(query("keyword_index_ddl"), "ix_memory_kw_ab", "k'; --") == (
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_memory_kw_ab ON amrita_memory.memory "
        "USING gin (search_tokens) WHERE partition_key = 'k''; --'"
    )


async def test_clearing_the_store_empties_every_table_a_restore_replaces(
    conn: asyncpg.Connection,
) -> None:
    """restore's "delete everything" is one statement of data-modifying CTEs: each of them
    runs although the outer SELECT reads only the first."""
    vector = "[1,0,0]"
    await conn.execute(
        "INSERT INTO amrita_memory.memory (id, partition_key, scope, content, importance, "
        "embedding, embed_fingerprint) VALUES (md5('a'), 'k', 'user', 'c', 5, $1::text::vector, 'f'), "
        "(md5('b'), 'k', 'user', 'd', 5, $1::text::vector, 'f')",
        vector,
    )
    await conn.execute(
        "INSERT INTO amrita_memory.memo (partition_key, content) VALUES ('k', 'memo')"
    )
    await conn.execute(
        "INSERT INTO amrita_memory.knowledge (kid, title, embedding, embed_fingerprint) "
        "VALUES ('0000abcd', 't', $1::text::vector, 'f')",
        vector,
    )
    await conn.execute(
        "INSERT INTO amrita_memory.reembed_job (id, target_fingerprint) VALUES (1, 'g')"
    )
    await conn.execute(
        "INSERT INTO amrita_memory.reembed_staging (kind, row_id, fingerprint, embedding, "
        "source_updated_at) VALUES ('memory', md5('a'), 'g', $1::text::vector, now())",
        vector,
    )
    await conn.execute(
        "UPDATE amrita_memory.sweep_state SET cursor_id = md5('a'), cursor_key = 'k/' || md5('a')"
        " WHERE id = 1"
    )
    async with conn.transaction():
        assert await conn.fetchval(query("clear_store")) == 2
    counts = await conn.fetchrow(
        "SELECT (SELECT count(*) FROM amrita_memory.memory) AS memory,"
        " (SELECT count(*) FROM amrita_memory.memo) AS memo,"
        " (SELECT count(*) FROM amrita_memory.knowledge) AS knowledge,"
        " (SELECT count(*) FROM amrita_memory.reembed_job) AS job,"
        " (SELECT count(*) FROM amrita_memory.reembed_staging) AS staging,"
        " (SELECT cursor_id FROM amrita_memory.sweep_state WHERE id = 1) AS cursor,"
        " (SELECT cursor_key FROM amrita_memory.sweep_state WHERE id = 1) AS cursor_key"
    )
    assert dict(counts.items()) == {
        "memory": 0, "memo": 0, "knowledge": 0, "job": 0, "staging": 0, "cursor": "",
        "cursor_key": "",
    }  # fmt: skip
