-- Backups and restores (amrita_memory_pg/maintenance/backup.py, restore.py). A backup
-- reads everything in ONE repeatable-read snapshot that pg_dump shares; the export
-- queries name their columns, and tests/integration/test_backups.py checks that they
-- are exactly the column tuples a restore copies back (MEMORY_COLUMNS, MEMO_COLUMNS,
-- KNOWLEDGE_COLUMNS), so the two cannot drift apart.

-- name: export_snapshot
-- Export the calling transaction's snapshot (must be REPEATABLE READ) so that pg_dump
-- --snapshot reads exactly what the JSONL export reads.
SELECT pg_export_snapshot() AS snapshot;

-- name: store_counts
-- Rows per kind that a backup holds (memory, memo, knowledge, profile, profile_history,
-- permission grants), in one round trip.
SELECT (SELECT count(*) FROM amrita_memory.memory)::integer           AS memory,
       (SELECT count(*) FROM amrita_memory.memo)::integer             AS memo,
       (SELECT count(*) FROM amrita_memory.knowledge)::integer        AS knowledge,
       (SELECT count(*) FROM amrita_memory.profile)::integer          AS profile,
       (SELECT count(*) FROM amrita_memory.profile_history)::integer  AS profile_history,
       (SELECT count(*) FROM amrita_memory.permission_grant)::integer AS permission_grant;

-- name: export_memories
-- Every memory with its vector, in id order (= MEMORY_COLUMNS).
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       origin, created_at, updated_at, tier_since, embedding, embed_fingerprint
  FROM amrita_memory.memory
 ORDER BY id;

-- name: export_memos
-- Every memo, in partition order (= MEMO_COLUMNS).
SELECT partition_key, content, version, updated_at
  FROM amrita_memory.memo
 ORDER BY partition_key;

-- name: export_knowledge
-- Every knowledge entry with its vector, in kid order (= KNOWLEDGE_COLUMNS).
SELECT kid, title, summary, body, embedding, embed_fingerprint, created_at, updated_at
  FROM amrita_memory.knowledge
 ORDER BY kid;

-- name: export_profiles
-- Every user profile, in partition order (= PROFILE_COLUMNS).
SELECT partition_key, summary, lines, version, updated_at
  FROM amrita_memory.profile
 ORDER BY partition_key;

-- name: export_profile_history
-- Every kept profile change, by partition and version (= PROFILE_HISTORY_COLUMNS).
SELECT partition_key, version, operation, actor_kind, actor, cycle_id,
       old_summary, old_lines, new_summary, new_lines, changed_at
  FROM amrita_memory.profile_history
 ORDER BY partition_key, version;

-- name: export_permission_grants
-- Every permission grant, by user (= GRANT_COLUMNS).
SELECT user_id, node, granted_by, created_at
  FROM amrita_memory.permission_grant
 ORDER BY user_id, node;

-- name: merge_restored_grant
-- One grant of a backup, merged: a restore never revokes a grant made since the backup
-- (clear_store leaves the grants alone), and restoring twice changes nothing.
INSERT INTO amrita_memory.permission_grant (user_id, node, granted_by, created_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (user_id, node) DO NOTHING;

-- name: clear_store
-- Empty the store before a restore copies the backup in, in the restore's transaction:
-- memories, memos, knowledge, profiles and their history, any re-embed in progress (its staged vectors belong to
-- the rows being replaced), and the sweep cursor. One statement: data-modifying CTEs
-- all run, on the same snapshot (no foreign keys link these tables, so no row is
-- deleted twice). Returns how many memories were removed.
WITH memories AS (DELETE FROM amrita_memory.memory RETURNING 1),
     memos AS (DELETE FROM amrita_memory.memo),
     knowledge AS (DELETE FROM amrita_memory.knowledge),
     profiles AS (DELETE FROM amrita_memory.profile),
     profile_history AS (DELETE FROM amrita_memory.profile_history),
     staging AS (DELETE FROM amrita_memory.reembed_staging),
     job AS (DELETE FROM amrita_memory.reembed_job),
     sweep AS (UPDATE amrita_memory.sweep_state SET cursor_id = '')
SELECT count(*)::integer AS memories
  FROM memories;

-- name: drop_store_schema
-- Drop our whole schema before psql replays a pg_restore script of it, in the same
-- single transaction (psql --single-transaction: a failed replay keeps the old schema).
DROP SCHEMA IF EXISTS amrita_memory CASCADE;
