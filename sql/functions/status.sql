-- What `amrita-memory status` and an operator's psql read about the partitions.


-- Per-partition usage: L2 memory counts by tier, age range, content size, and the
-- L1 memo length. One row per partition that has memories or a memo.
--   psql> SELECT * FROM amrita_memory.partition_usage ORDER BY memories DESC LIMIT 20;
CREATE OR REPLACE VIEW amrita_memory.partition_usage AS
WITH m AS (
    SELECT partition_key,
           count(*)                                          AS memories,
           count(*) FILTER (WHERE importance >= 8)            AS high,
           count(*) FILTER (WHERE importance BETWEEN 4 AND 7) AS medium,
           count(*) FILTER (WHERE importance <= 3)            AS low,
           count(*) FILTER (WHERE scope = 'user')             AS scope_user,
           count(*) FILTER (WHERE scope = 'group')            AS scope_group,
           count(*) FILTER (WHERE scope = 'global')           AS scope_global,
           min(created_at)                                   AS oldest,
           max(created_at)                                   AS newest,
           sum(octet_length(content))::bigint                AS content_bytes
    FROM amrita_memory.memory
    GROUP BY partition_key
)
SELECT coalesce(m.partition_key, n.partition_key) AS partition_key,
       coalesce(m.memories, 0)                     AS memories,
       coalesce(m.high, 0)                         AS high,
       coalesce(m.medium, 0)                       AS medium,
       coalesce(m.low, 0)                          AS low,
       coalesce(m.scope_user, 0)                   AS scope_user,
       coalesce(m.scope_group, 0)                  AS scope_group,
       coalesce(m.scope_global, 0)                 AS scope_global,
       m.oldest,
       m.newest,
       coalesce(m.content_bytes, 0)                AS content_bytes,
       coalesce(char_length(n.content), 0)         AS memo_chars
FROM m
FULL JOIN amrita_memory.memo AS n ON n.partition_key = m.partition_key;
COMMENT ON VIEW amrita_memory.partition_usage IS
'Per partition: memory counts by tier and scope, age range, content bytes, and the L1 memo length. One row per partition with memories or a memo.';
