"""Ready for Citus: every table whose rows belong to a partition leads its primary key with
the partition key (the distribution column); every table is placed (docs/scaling.md)."""

from __future__ import annotations

import asyncpg

from amrita_memory_pg.storage.pg.schema import SCHEMA

#: table -> its distribution column (a uni_id, hashed the same way, so all are colocated)
DISTRIBUTED = {
    "memory": "partition_key",
    "memo": "partition_key",
    "ann_index": "partition_key",
    "chat_log": "session_key",
    "activity_heatmap": "user_key",
    "profile": "partition_key",
    "profile_history": "partition_key",
    "l3_state": "target_key",
    "consolidation_cycle": "target_key",
    "token_usage": "target_key",
    "pending_message": "target_key",
    # extraction and loaded scopes: the chat whose log a run read / that loaded a scope
    "extraction_run": "session_key",
    "loaded_scope": "chat_key",
    # the trail of a memory, and a paused partition
    "memory_access": "partition_key",
    "memory_change": "partition_key",
    "paused_partition": "partition_key",
    # the kept row count of a partition (the cap's): beside its rows
    "partition_count": "partition_key",
    # the rows a forget withheld, per partition whose loop derives them again
    "rederive_task": "partition_key",
}
#: small or global tables, replicated to every node
REFERENCE = {
    "store_meta",
    "sweep_state",
    "knowledge",
    "reembed_job",
    "reembed_staging",
    "knowledge_suggestion",
    "permission_grant",
    # who in the fleet runs which long work (a few rows, claimed by key)
    "lease",
    # the admin page's background jobs of every process (tens of rows)
    "job",
    # the one-row claim of the scheduled backup
    "backup_schedule",
}
#: stays on the coordinator, where migrations run (and the admin page's audit log: a few
#: rows per operator action; its partition_key is a filter, not a distribution key; and
#: the sweep's batch rows, each spanning the partitions its batch changed)
LOCAL = {
    "alembic_version",
    "admin_audit",
    "web_session",
    "web_login_failure",
    "sweep_change",
    # an edge joins two partitions (a knowledge entry from several users, a group memory
    # from a person's line); the ledger is a few rows, applied by a restore
    "lineage",
    "erasure_ledger",
}

PRIMARY_KEYS = """
SELECT c.relname AS table_name,
       array_agg(a.attname ORDER BY k.ord) AS columns
  FROM pg_constraint p
  JOIN pg_class c ON c.oid = p.conrelid
  CROSS JOIN LATERAL unnest(p.conkey) WITH ORDINALITY AS k(attnum, ord)
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
 WHERE p.contype = 'p' AND c.relnamespace = $1::regnamespace
 GROUP BY c.relname
"""


async def test_every_partitioned_table_leads_its_primary_key_with_the_partition_key(
    db_dsn: str,
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        keys = {r["table_name"]: list(r["columns"]) for r in await conn.fetch(PRIMARY_KEYS, SCHEMA)}
        tables = {
            r["tablename"]
            for r in await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = $1", SCHEMA
            )
        }
    finally:
        await conn.close()
    # A new table must be placed here (and in docs/scaling.md) before it ships.
    assert tables == set(DISTRIBUTED) | REFERENCE | LOCAL
    assert {t: keys[t][0] for t in DISTRIBUTED} == DISTRIBUTED
    assert keys["memory"] == ["partition_key", "id"]
    assert keys["chat_log"] == ["session_key", "id"]
    assert keys["profile_history"] == ["partition_key", "version"]
    # Reference tables hold no per-partition rows: no distribution column to forget.
    partition_columns = set(DISTRIBUTED.values())
    conn = await asyncpg.connect(db_dsn)
    try:
        misplaced = await conn.fetch(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = $1 AND table_name = ANY($2::text[]) AND column_name = ANY($3::text[])",
            SCHEMA,
            sorted(REFERENCE),
            sorted(partition_columns),
        )
    finally:
        await conn.close()
    assert [tuple(r) for r in misplaced] == []
