-- What `amrita-memory status` shows about the store (amrita_memory_pg/maintenance/
-- status.py and fingerprint.py). Whole-table counts: an operator's command, not a
-- per-message path.

-- name: status_counts
-- Memories, distinct partitions with memories, non-empty memos, knowledge entries,
-- user profiles and the profile changes kept for revert.
SELECT (SELECT count(*) FROM amrita_memory.memory)::integer                      AS memories,
       (SELECT count(DISTINCT partition_key) FROM amrita_memory.memory)::integer AS partitions,
       (SELECT count(*) FROM amrita_memory.memo WHERE content <> '')::integer    AS memos,
       (SELECT count(*) FROM amrita_memory.knowledge)::integer                   AS knowledge,
       (SELECT count(*) FROM amrita_memory.profile)::integer                     AS profiles,
       (SELECT count(*) FROM amrita_memory.profile_history)::integer             AS profile_changes;

-- name: status_by_scope
-- Memories per scope (user, group, global), in scope order.
SELECT scope, count(*)::integer AS n
  FROM amrita_memory.memory
 GROUP BY scope
 ORDER BY scope;

-- name: status_by_tier
-- Memories per importance tier: low 1-3, medium 4-7, high 8-10 (domain.importance).
SELECT count(*) FILTER (WHERE importance <= 3)::integer           AS low,
       count(*) FILTER (WHERE importance BETWEEN 4 AND 7)::integer AS medium,
       count(*) FILTER (WHERE importance >= 8)::integer           AS high
  FROM amrita_memory.memory;

-- name: status_top_partitions
-- The $1 partitions with the most memories (ties by key), from the partition_usage view.
SELECT partition_key, memories
  FROM amrita_memory.partition_usage
 WHERE memories > 0
 ORDER BY memories DESC, partition_key
 LIMIT $1;

-- name: count_vector_rows
-- Rows that carry a vector (memories + knowledge entries): whether the store is empty
-- as far as the embedding model is concerned.
SELECT ((SELECT count(*) FROM amrita_memory.memory)
        + (SELECT count(*) FROM amrita_memory.knowledge))::integer AS n;

-- name: status_sweep_state
-- The decay sweep's persisted cursor ('partition_key/id' of the last memory swept, '' =
-- the start), its completed full passes and when it last moved; no row before the first
-- sweep.
SELECT cursor_key, passes, updated_at
  FROM amrita_memory.sweep_state
 WHERE id = 1;

-- name: status_partition_count_drift
-- The partitions whose kept row count (what the cap reads) differs from their rows:
-- partition_count_check_v1 without repair (a whole-table count). Normally none.
SELECT partition_key, kept, actual
  FROM amrita_memory.partition_count_check_v1(false);
