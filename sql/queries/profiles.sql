-- User profile statements (amrita_memory_pg/storage/profiles.py, one typed wrapper each).
-- A profile belongs to a personal partition; every statement filters by its key (the
-- primary key's first column). Writes go through profile_save_v1 (a row-locked
-- compare-and-set that also records the history row and trims the history).

-- name: get_profile
-- The profile of one partition: a primary-key lookup. No row = no profile (version 0).
SELECT summary, lines, version, updated_at
  FROM amrita_memory.profile
 WHERE partition_key = $1;

-- name: lock_profile_key
-- Serialise the edits of one profile until the transaction ends (a transaction-level
-- advisory lock on a hash of the key): an edit reads, applies and saves under it, so
-- the compare-and-set of profile_save_v1 succeeds the first time. Its own statement:
-- the read that follows takes its snapshot after the lock is held.
SELECT pg_advisory_xact_lock(hashtextextended('amrita_memory.profile:' || $1::text, 0));

-- name: save_profile
-- Store new content if the version is still $2; see profile_save_v1 for the arguments:
-- key, expected version, summary, lines, operation, actor kind, actor, cycle id, keep, now.
SELECT saved, new_version
  FROM amrita_memory.profile_save_v1($1, $2, $3, $4::text[], $5, $6, $7, $8, $9, $10);

-- name: list_profile_history
-- The newest $2 changes of one profile, newest first, with line counts (not the lines:
-- a listing shows what changed; `profile history --version` shows the content).
SELECT version, operation, actor_kind, actor, cycle_id, changed_at,
       old_summary, cardinality(old_lines)::integer AS old_count,
       new_summary, cardinality(new_lines)::integer AS new_count
  FROM amrita_memory.profile_history
 WHERE partition_key = $1
 ORDER BY version DESC
 LIMIT $2;

-- name: get_profile_history_entry
-- One change of one profile by its version, with the full content before and after
-- (what a revert to that version, or to the one before it, restores).
SELECT version, operation, actor_kind, actor, cycle_id, changed_at,
       old_summary, old_lines, new_summary, new_lines
  FROM amrita_memory.profile_history
 WHERE partition_key = $1 AND version = $2;


-- name: profile_partition_keys
-- Every profile's partition key (the key migration converts them like memos' keys).
SELECT partition_key
  FROM amrita_memory.profile;

-- name: profile_history_partition_keys
-- Every partition key that has history rows (a key migration must not move a profile
-- onto a key whose history would collide).
SELECT DISTINCT partition_key
  FROM amrita_memory.profile_history;

-- name: rename_profile_partition
-- Move the profile of key $1 and its history to key $2 (the caller checked that $2 has
-- neither). One statement: both tables change on the same snapshot.
WITH moved AS (
    UPDATE amrita_memory.profile_history SET partition_key = $2 WHERE partition_key = $1
)
UPDATE amrita_memory.profile
   SET partition_key = $2
 WHERE partition_key = $1;

-- name: profile_list
-- A page of profiles, the most recently changed first: key, version, summary and line
-- count ($1 rows from offset $2), with the number of profiles in every row. A whole-table
-- read for the admin page, not a chat path.
SELECT partition_key, version, summary, cardinality(lines)::integer AS line_count, updated_at,
       count(*) OVER ()::integer AS total
  FROM amrita_memory.profile
 ORDER BY updated_at DESC, partition_key
 LIMIT $1 OFFSET $2;
