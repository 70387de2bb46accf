-- The partition-key migration to the current uni_id format (amrita_memory_pg/maintenance/
-- keys.py): the key conversion itself is Python (domain.keys.to_current, one pure rule);
-- these statements read the distinct keys and rename them, all in one transaction.

-- name: lock_key_migration
-- Serialise key migrations (a bot starting and the CLI at once) until the transaction
-- ends: a transaction-level advisory lock on a fixed 64-bit key.
SELECT pg_advisory_xact_lock(hashtextextended('amrita_memory.keys', 0));

-- name: memory_partition_keys
-- Every (partition key, scope) pair of the memories and how many rows it has: the keys
-- to convert (a bare legacy key needs its scope to say user or group).
SELECT partition_key, scope, count(*)::integer AS n
  FROM amrita_memory.memory
 GROUP BY partition_key, scope;

-- name: memo_partition_keys
-- Every memo's partition key (a memo has no scope).
SELECT partition_key
  FROM amrita_memory.memo;

-- name: rename_memory_partition
-- Move the memories of key $1 and scope $2 to key $3 (ids stay unique: they are 128
-- random bits). Returns nothing; the count was read before.
UPDATE amrita_memory.memory
   SET partition_key = $3
 WHERE partition_key = $1 AND scope = $2;

-- name: rename_memo_partition
-- Move the memo of key $1 to key $2 (the caller checked that $2 has none).
UPDATE amrita_memory.memo
   SET partition_key = $2
 WHERE partition_key = $1;
