-- The memory's trail: who recalled a memory, who changed it, paused
-- partitions. Every statement names its partition key first, the distribution column
-- under Citus. The functions are sql/functions/trail.sql.

-- name: trail_act
-- Who writes in the current transaction ($1 'kind:id', e.g. person:10001, llm:<chat>),
-- an optional op hint $2 ('merge' or '') and note $3, and the history bounds $4 (changes
-- kept per memory) and $5 (days a deleted memory's history stays). Transaction-local
-- (set_config … true): gone at commit, never leaks to the pool's next user.
SELECT set_config('amrita_memory.actor', $1::text, true),
       set_config('amrita_memory.op', $2::text, true),
       set_config('amrita_memory.note', $3::text, true),
       set_config('amrita_memory.history_keep', $4::integer::text, true),
       set_config('amrita_memory.history_keep_deleted_days', $5::integer::text, true);

-- name: trail_recall
-- After a search of partition $1: true when it is paused (nothing logged), else log its
-- hits $2 (ids) with scores $3 at $4 by chat $5, speaker $6, query $7 (redacted), surface
-- $8, keeping $9 per memory, when $10. One round trip for both.
SELECT amrita_memory.recall_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) AS paused;

-- name: trail_log_access
-- Log memories $2 of partitions $1 (pairwise) recalled at $4 through surface $8 with
-- scores $3 (NULL = none), chat $5, speaker $6, query $7; keep $9 per memory. Returns
-- the rows written.
SELECT amrita_memory.log_access_v1($1, $2, $3, $4, $5, $6, $7, $8, $9) AS written;

-- name: trail_paused_among
-- Which of the partitions $1 are paused (the per-turn filter of the memory block).
SELECT coalesce(array_agg(p.partition_key ORDER BY p.partition_key), '{}'::text[]) AS paused
  FROM amrita_memory.paused_partition p
 WHERE p.partition_key = ANY ($1::text[]);

-- name: trail_pause
-- Pause partition $1 at $2 by $3 for reason $4; pausing again keeps the first time and
-- author. Returns whether it was newly paused.
INSERT INTO amrita_memory.paused_partition AS p (partition_key, paused_at, paused_by, reason)
VALUES ($1, $2, $3, $4)
ON CONFLICT (partition_key) DO NOTHING
RETURNING true AS paused;

-- name: trail_resume
-- Resume partition $1; returns it, no row when it was not paused.
DELETE FROM amrita_memory.paused_partition
 WHERE partition_key = $1
RETURNING partition_key;

-- name: trail_paused_list
-- Every paused partition, newest first.
SELECT partition_key, paused_at, paused_by, reason
  FROM amrita_memory.paused_partition
 ORDER BY paused_at DESC, partition_key;

-- name: trail_pause_state
-- The pause of partition $1 (no row: not paused).
SELECT partition_key, paused_at, paused_by, reason
  FROM amrita_memory.paused_partition
 WHERE partition_key = $1;

-- name: trail_access_log
-- The newest $3 recalls of memory $2 of partition $1.
SELECT partition_key, memory_id, seq, at, surface, chat_key, who, query, score
  FROM amrita_memory.memory_access
 WHERE partition_key = $1 AND memory_id = $2
 ORDER BY seq DESC
 LIMIT $3;

-- name: trail_change_history
-- The newest $3 changes of memory $2 of partition $1 (a deleted memory's too): its own
-- rows and its entries in the sweep's batch rows (trail.sql).
SELECT partition_key, memory_id, seq, at, actor_kind, actor_id, op, before, after, note
  FROM amrita_memory.memory_history_v1($1, $2, $3);
