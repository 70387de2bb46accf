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
-- Every memory with its vector (= MEMORY_COLUMNS), as the rows lie in the table: a
-- sequential scan the cursor streams. No ORDER BY: at a million memories it sorted 1.9 GB
-- in temp files before the first row (or, as a cursor's fast-start plan, read the table
-- in index order, a random page per row once it outgrows shared_buffers). Nothing needs
-- the order: a restore COPYs the rows in any order, and the header's digests are of
-- sorted row hashes (table_digest_v1).
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       origin, created_at, updated_at, tier_since, embedding, embed_fingerprint
  FROM amrita_memory.memory;

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

-- name: export_partition_memories
-- One partition's memories ($1) with their vectors, in id order (= MEMORY_COLUMNS): the
-- admin page's partition export writes them as the backup writes every memory.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       origin, created_at, updated_at, tier_since, embedding, embed_fingerprint
  FROM amrita_memory.memory
 WHERE partition_key = $1
 ORDER BY id;

-- name: export_partition_memo
-- One partition's memo ($1), if it has one (= MEMO_COLUMNS).
SELECT partition_key, content, version, updated_at
  FROM amrita_memory.memo
 WHERE partition_key = $1;

-- name: export_partition_profile
-- One partition's user profile ($1), if it has one (= PROFILE_COLUMNS).
SELECT partition_key, summary, lines, version, updated_at
  FROM amrita_memory.profile
 WHERE partition_key = $1;

-- name: export_partition_profile_history
-- One partition's kept profile changes ($1), by version (= PROFILE_HISTORY_COLUMNS).
SELECT partition_key, version, operation, actor_kind, actor, cycle_id,
       old_summary, old_lines, new_summary, new_lines, changed_at
  FROM amrita_memory.profile_history
 WHERE partition_key = $1
 ORDER BY version;

-- name: partition_export_counts
-- Rows per kind a partition export ($1) holds, for its header, in one round trip.
SELECT (SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1)::integer
           AS memory,
       (SELECT count(*) FROM amrita_memory.memo WHERE partition_key = $1)::integer AS memo,
       (SELECT count(*) FROM amrita_memory.profile WHERE partition_key = $1)::integer
           AS profile,
       (SELECT count(*) FROM amrita_memory.profile_history WHERE partition_key = $1)::integer
           AS profile_history;

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
     sweep AS (UPDATE amrita_memory.sweep_state SET cursor_id = '', cursor_key = '')
SELECT count(*)::integer AS memories
  FROM memories;

-- name: restore_history_by_writer
-- A restore whose backup carries the change history and the access log ($1 'on', then
-- ''): the trail triggers stay out of clearing and copying the memories (trail.sql),
-- whose history rows and access-log follow-up would be emptied and replaced by the
-- backup's anyway. Transaction-local: rolled back with a failed restore.
SELECT set_config('amrita_memory.history_by_writer', $1::text, true);

-- name: drop_store_schema
-- Drop our whole schema before psql replays a pg_restore script of it, in the same
-- single transaction (psql --single-transaction: a failed replay keeps the old schema).
DROP SCHEMA IF EXISTS amrita_memory CASCADE;

-- name: table_digest
-- Rows and content digest of one table ($1) without the derived columns $2
-- (table_digest_v1): written into a backup's header, compared by backup verify.
SELECT row_count, digest FROM amrita_memory.table_digest_v1($1, $2::text[]);

-- name: export_table_rows
-- Every row of one table ($1, one of GENERIC_TABLES) as canonical JSON text without the
-- derived columns $2 (export_table_v1), streamed by a cursor into the JSONL.
SELECT row_json FROM amrita_memory.export_table_v1($1, $2::text[]) AS row_json;

-- name: import_table_rows
-- A restore: a batch of one table's rows ($2, a JSON array of export_table_rows objects)
-- back into the table $1, identity values as they were (import_rows_v1).
SELECT amrita_memory.import_rows_v1($1, $2::jsonb);

-- name: clear_table
-- A restore: empty one table ($1) the backup carries, in the restore's transaction.
SELECT amrita_memory.clear_table_v1($1);

-- name: reset_table_identity
-- A restore: move the identity sequences of table $1 past the restored values.
SELECT amrita_memory.reset_identity_v1($1);

-- name: reset_history_sequence
-- A restore: move memory_change's sequence past the restored sweep batch rows too (they
-- take their seq from it, sweep.sql), so the two tables keep ordering as one history.
SELECT setval(pg_get_serial_sequence('amrita_memory.memory_change', 'seq'),
              greatest((SELECT max(seq) FROM amrita_memory.sweep_change),
                       (SELECT max(seq) FROM amrita_memory.memory_change), 1));

-- name: claim_backup_slot
-- Scheduled backups: claim slot $1 for process $2 (claim_backup_slot_v1); true for one
-- caller of the fleet per slot.
SELECT amrita_memory.claim_backup_slot_v1($1, $2);

-- name: finish_backup_slot
-- Scheduled backups: how the claimed slot $1 ended (backup stem $2, ok $3, error $4);
-- only while the row still holds that slot.
UPDATE amrita_memory.backup_schedule
   SET finished_at = now(), stem = $2, ok = $3, error = $4
 WHERE id = 1 AND last_slot = $1;

-- name: backup_schedule_state
-- Scheduled backups: the last claimed slot and how it ended (status, CLI).
SELECT last_slot, claimed_by, claimed_at, finished_at, stem, ok, error
  FROM amrita_memory.backup_schedule
 WHERE id = 1;

-- name: create_scratch_database_ddl
-- backup verify: the CREATE DATABASE statement of the throwaway database $1 (the server
-- quotes the name; CREATE DATABASE takes no parameters).
SELECT format('CREATE DATABASE %I', $1::text);

-- name: drop_scratch_database_ddl
-- backup verify: the DROP DATABASE statement of the throwaway database $1, closing any
-- connection left in it.
SELECT format('DROP DATABASE IF EXISTS %I WITH (FORCE)', $1::text);
