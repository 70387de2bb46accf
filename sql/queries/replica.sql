-- Reads a streaming replica answers (amrita_memory_pg/storage/reads.py): no
-- statement here writes, so each runs on a hot standby.

-- name: search_unpaused
-- recall_memories without the access log, for a replica (the log is written to the
-- primary behind the read, services/trail.py AccessLogWriter): search_memories' arguments
-- (same names, bound BY NAME: storage/pgvector.py search_args), the pause check first.
-- A paused partition gives one status row (id NULL, paused = true) and the search is not
-- run: the NOT EXISTS does not depend on the search's rows, so the planner makes it a
-- one-time filter above the function scan. Hit rows have paused = false, in the search's
-- order (n, its ordinality).
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at, distance, decay_score, age_days, keyword_score, paused
  FROM (SELECT s.id, s.partition_key, s.scope, s.content, s.tags, s.importance, s.category,
               s.source, s.author, s.created_at, s.updated_at, s.distance, s.decay_score,
               s.age_days, s.keyword_score, false AS paused, s.n
          FROM amrita_memory.search_memories_v8(
                   p_partition => $1, p_query => $2, p_tokens => $3, p_mode => $4,
                   p_top_k => $5, p_now => $6, p_decay => $7, p_base_days => $8,
                   p_boost => $9, p_floor => $10, p_importance_min => $11,
                   p_importance_max => $12, p_scope => $13, p_tags => $14,
                   p_category => $15, p_candidates => $16, p_fusion => $17, p_rrf_k => $18,
                   p_weight => $19) WITH ORDINALITY AS s(id, partition_key, scope, content,
                   tags, importance, category, source, author, created_at, updated_at,
                   distance, decay_score, age_days, keyword_score, n)
         WHERE NOT EXISTS (SELECT 1 FROM amrita_memory.paused_partition p
                            WHERE p.partition_key = $1)
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
               NULL, NULL, true, 0
         WHERE EXISTS (SELECT 1 FROM amrita_memory.paused_partition p
                        WHERE p.partition_key = $1)) r
 ORDER BY n;
