"""A backup is the whole store: every table of the schema is carried by
the JSONL and the dump, or listed with its reason in NOT_BACKED_UP; a restore brings every
row back as it was — the change history too, without "system" rows of its own — on
pgvector and on chroma. The tables are read from the catalogue, so a table added later
without backup support fails here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from amrita_memory_pg.maintenance.backup import (
    BACKED_UP,
    DERIVED_COLUMNS,
    GENERIC_TABLES,
    NOT_BACKED_UP,
    create_backup,
)
from amrita_memory_pg.maintenance.restore import restore_backup
from tests.support.memory import add_knowledge, memory_on
from tests.support.pg import PgServer

KEY = "QQPlatform_Private_10001"
GROUP = "QQPlatform_Group_555"

#: per table: rows and a digest of their canonical content (each row's JSON minus the
#: columns a restore recomputes), order-free; written here, independent of the
#: production table_digest_v1, so that a wrong digest there cannot hide a lost row
TEST_DIGEST = """
SELECT count(*) AS rows,
       md5(coalesce(string_agg(r, E'\\n' ORDER BY r), '')) AS digest
  FROM (SELECT (to_jsonb(t) - $1::text[])::text AS r FROM amrita_memory.{table} t) s
"""


async def catalogue_tables(conn: Any) -> set[str]:
    rows = await conn.fetch(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = 'amrita_memory' AND table_type = 'BASE TABLE'"
    )
    return {r["table_name"] for r in rows}


async def snapshot(conn: Any) -> dict[str, tuple[int, str]]:
    """Rows + canonical digest of every table of the catalogue that a backup carries."""
    await conn.execute("SET TimeZone = 'UTC'")
    out = {}
    for table in sorted(await catalogue_tables(conn) - set(NOT_BACKED_UP)):
        skip = sorted(DERIVED_COLUMNS.get(table, frozenset()))
        row = await conn.fetchrow(TEST_DIGEST.format(table=table), skip)
        out[table] = (row["rows"], row["digest"])
    return out


async def fill_every_table(mem: Any) -> None:
    """At least one row in every table a backup carries, written as the product does
    where a service exists, else by plain SQL."""
    pool = mem.pool
    first = await mem.memories.add(
        partition_key=KEY, scope="user", content="喜欢猫", tags=["pet"], importance=7
    )
    for i in range(5):
        await mem.memories.add(partition_key=KEY, scope="user", content=f"记忆 {i}：喜欢 猫")
    await mem.memories.add(
        partition_key=GROUP, scope="group", content="群规：不刷屏", source="user"
    )
    await mem.memories.update(KEY, first.id, content="非常喜欢猫")  # a change history
    # the sweep's batch row (sweep_change): a low-importance memory past its tier, purged
    now = datetime.now(UTC)
    await mem.memories.add(
        partition_key=KEY, scope="user", content="今天吃了面", importance=2,
        now=now - timedelta(days=8),
    )  # fmt: skip
    assert (await mem.memories.sweep(now=now, force=True)).purged == 1
    await mem.memos.replace(KEY, "用户叫小明")
    await add_knowledge(mem, "0a1b2c3d", "猫的饮食", "不能吃巧克力", "正文")
    await pool.execute(
        """
        INSERT INTO amrita_memory.profile (partition_key, summary, lines, version)
        VALUES ($1, '喜欢猫的程序员', '{"喜欢猫", "写 Python"}', 2);
        INSERT INTO amrita_memory.profile_history
               (partition_key, version, operation, actor_kind, actor, old_summary, old_lines,
                new_summary, new_lines)
        VALUES ($1, 2, 'update', 'cli', 'admin', '', '{}', '喜欢猫的程序员', '{"喜欢猫"}');
        INSERT INTO amrita_memory.permission_grant (user_id, node, granted_by)
        VALUES ('10001', 'memory.knowledge', 'root');
        INSERT INTO amrita_memory.l3_state (target_key, penalty, runs, next_run_at, heat, plan)
        VALUES ($1, 3, 2, now() + interval '1 hour', '{"a": 1.5}', '{"window": [1, 2]}');
        INSERT INTO amrita_memory.activity_heatmap (user_key, weekday, slot, hits)
        VALUES ($1, 2, 7, 9);
        INSERT INTO amrita_memory.chat_log (session_key, user_id, role, text)
        VALUES ($1, '10001', 'user', '你好');
        INSERT INTO amrita_memory.loaded_scope (chat_key, scope_key, loaded_by)
        VALUES ($2, $1, '10001');
        INSERT INTO amrita_memory.paused_partition (partition_key, paused_at, paused_by, reason)
        VALUES ($2, now(), 'person:10001', '测试');
        INSERT INTO amrita_memory.admin_audit
               (actor, role, client, action, partition_key, target_id, detail, ok)
        VALUES ('admin', 'admin', '127.0.0.1', 'memo.edit', $1, '', '{"chars": 5}', true);
        INSERT INTO amrita_memory.knowledge_suggestion (action, kid, title, summary, body, author_id)
        VALUES ('create', 'ffff0000', '新条目', '摘要', '', '10001');
        """.replace("$1", f"'{KEY}'").replace("$2", f"'{GROUP}'")
    )
    cycle = await pool.fetchval(
        "INSERT INTO amrita_memory.consolidation_cycle "
        "(target_key, trigger, started_at, ended_at, ok, prompt_tokens) "
        "VALUES ($1, 'scheduled', now(), now(), true, 120) RETURNING id",
        KEY,
    )
    await pool.execute(
        "INSERT INTO amrita_memory.token_usage (target_key, cycle_id, purpose, model, prompt_tokens) "
        "VALUES ($1, $2, 'step', 'm', 120)",
        KEY,
        cycle,
    )
    await pool.execute(
        "INSERT INTO amrita_memory.pending_message (target_key, cycle_id, content, created_at) "
        "VALUES ($1, $2, '早上好', now())",
        KEY,
        cycle,
    )
    await pool.execute(
        "INSERT INTO amrita_memory.extraction_run "
        "(session_key, partition_key, trigger, status, entries, started_at, finished_at, "
        "total_tokens) VALUES ($1, $1, 'expiry', 'ok', 2, now(), now(), 33)",
        KEY,
    )
    await pool.execute(
        "SELECT amrita_memory.log_access_v1(ARRAY[$1], ARRAY[$2], ARRAY[0.75::float8], now(), "
        "$1, '10001', '猫', 'tool', 20)",
        KEY,
        first.id,
    )
    # lineage, a withheld row's task and the erasure ledger: a memo sentence the loop wrote
    # from the first memory, a task, and a forget (of a memory gone before the backup, so
    # the restore's ledger finds nothing of it to remove)
    await pool.execute(
        "INSERT INTO amrita_memory.lineage VALUES ('memo_sentence', $1, md5('用户叫小明'), "
        "'memory', $1, $2, 'l3', $3, now())",
        KEY,
        first.id,
        cycle,
    )
    await pool.execute(
        "INSERT INTO amrita_memory.rederive_task (partition_key, kind, row_key, row_id, held, "
        "sources, about, reason, created_at) VALUES ($1, 'profile_line', $1, md5('x'), "
        "'{\"text\": \"写 Python\"}', '[]', '[]', 'delete', now())",
        KEY,
    )
    gone = await mem.memories.add(partition_key=KEY, scope="user", content="临时")
    await mem.cases.forgetting.forget(KEY, [gone.id], requested_by="test", by_person=True)


@pytest.mark.parametrize("backend", ["pgvector", "chroma"])
async def test_every_table_round_trips_through_jsonl_and_dump(
    backend: str, db_dsn: str, pg_server: PgServer, template_db: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path / "source", vector_backend=backend) as mem:
        tables = await catalogue_tables(mem.pool)
        # every table of the catalogue is carried or listed with its reason, never both
        assert not set(BACKED_UP) & set(NOT_BACKED_UP)
        missing = tables - set(BACKED_UP) - set(NOT_BACKED_UP)
        assert not missing, f"tables neither backed up nor listed in NOT_BACKED_UP: {missing}"
        assert set(BACKED_UP) <= tables  # nothing exported that the schema lacks
        await fill_every_table(mem)
        async with mem.pool.acquire() as conn:
            before = await snapshot(conn)
        empty = [t for t, (rows, _) in before.items() if rows == 0]
        assert empty == [], "the fixture must fill every table it checks"
        info = await create_backup(mem.store)
        assert set(info.counts) == set(BACKED_UP)
        assert {t: info.counts[t] for t in before} == {t: n for t, (n, _) in before.items()}

    for source in (info.jsonl_path, info.dump_path):
        name = await pg_server.create_database(template=template_db)
        try:
            async with memory_on(
                pg_server.dsn(name), tmp_path / f"restore{source.suffix}", vector_backend=backend
            ) as fresh:
                # a history of this database's own, which the restore must replace
                await fresh.memories.add(partition_key=KEY, scope="user", content="恢复前的记忆")
                await restore_backup(fresh.store, source, force=True)
                async with fresh.pool.acquire() as conn:
                    after = await snapshot(conn)
                assert after == before, source.suffix
                # (equal digests say it already; this says what a failure would mean)
                own = await fresh.pool.fetchval(
                    "SELECT count(*) FROM amrita_memory.memory_change WHERE at >= $1",
                    info.created_at,
                )
                assert own == 0, "the restore recorded itself in the change history"
                # identity sequences move past restored ids: a new row does not collide
                await fresh.pool.execute(
                    "INSERT INTO amrita_memory.admin_audit "
                    "(actor, role, client, action, partition_key, target_id, ok) "
                    "VALUES ('a', 'admin', 'c', 'x', '', '', true)"
                )
                # the vector index (pgvector rows / the chroma collection) answers
                hits = await fresh.memories.search(KEY, "喜欢 猫", top_k=3)
                assert len(hits) == 3, source.suffix
        finally:
            await pg_server.drop_database(name)


async def test_the_generic_tables_are_exactly_the_backed_up_ones_without_column_lists(
    conn: asyncpg.Connection,
) -> None:
    """Every generic table exists and is exported whole (no explicit column list to drift)."""
    tables = await catalogue_tables(conn)
    assert set(GENERIC_TABLES) <= tables
    for table in GENERIC_TABLES:
        assert (
            await conn.fetchval(
                "SELECT count(*) FROM amrita_memory.export_table_v1($1, '{}')", table
            )
            == 0
        )
