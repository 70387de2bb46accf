-- Per-turn injection (issue 14), version 1. Released files are never edited: a change
-- is a new file (injection_v2.sql) installed by a new migration.
--
-- memory_block_v1 is the one round trip of every chat turn: the memos of p_memo_keys
-- (non-empty ones), the scopes chat p_chat_key has loaded, up to p_limit memories of
-- p_scope_keys plus the loaded scopes (importance desc, then most recently updated),
-- the p_top_k memories of those partitions nearest to p_query (none when p_top_k = 0
-- or p_query is NULL), and the profile summary of p_profile_key (none when NULL).
-- kind says which part a row belongs to: memo | loaded | memory | relevant | profile.
--
-- Why a function and not a prepared statement: the statement runs every turn with
-- different keys, and a prepared statement is planned again for its first five runs
-- per connection and whenever PostgreSQL prefers a custom plan -- measured 1.5 ms of
-- planning per turn, more than the execution. A SQL function with plan_cache_mode =
-- force_generic_plan plans its body once per connection and reuses the plan; every
-- partition filter is `partition_key = ANY(array)`, which the generic plan reads
-- through the partition btree as well (bench/bench_injection.py).
--   psql> SELECT kind, partition_key, left(content, 30)
--           FROM amrita_memory.memory_block_v1(ARRAY['qq_private_10001'], 'qq_private_10001',
--                ARRAY['qq_private_10001'], 20, NULL, 0, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.memory_block_v1(
    p_memo_keys text[],
    p_chat_key text,
    p_scope_keys text[],
    p_limit integer,
    p_query vector,
    p_top_k integer,
    p_profile_key text
) RETURNS TABLE (
    kind text,
    partition_key text,
    content text,
    id text,
    importance smallint,
    category text,
    updated_at timestamptz
)
LANGUAGE sql STABLE
SET plan_cache_mode = force_generic_plan
AS $fn$
WITH loaded AS (
    SELECT l.scope_key, l.loaded_at
      FROM amrita_memory.loaded_scope l
     WHERE l.chat_key = p_chat_key
), keys AS (
    SELECT array_cat(p_scope_keys, coalesce(array_agg(loaded.scope_key), '{}'::text[])) AS k
      FROM loaded
)
SELECT 'memo'::text, o.partition_key, o.content, NULL::text, NULL::smallint, NULL::text,
       o.updated_at
  FROM amrita_memory.memo o
 WHERE o.partition_key = ANY(p_memo_keys) AND o.content <> ''
UNION ALL
SELECT 'loaded', l.scope_key, NULL, NULL, NULL, NULL, l.loaded_at
  FROM loaded l
UNION ALL
(SELECT 'memory', m.partition_key, m.content, m.id, m.importance, m.category, m.updated_at
   FROM amrita_memory.memory m
  WHERE m.partition_key = ANY((SELECT keys.k FROM keys)::text[])
  ORDER BY m.importance DESC, m.updated_at DESC, m.id
  LIMIT p_limit)
UNION ALL
(SELECT 'relevant', m.partition_key, m.content, m.id, m.importance, m.category, m.updated_at
   FROM amrita_memory.memory m
  WHERE p_top_k > 0 AND p_query IS NOT NULL
    AND m.partition_key = ANY((SELECT keys.k FROM keys)::text[])
    AND vector_dims(m.embedding) = vector_dims(p_query)
  ORDER BY vector_l2_squared_distance(m.embedding, p_query), m.id
  LIMIT p_top_k)
UNION ALL
SELECT 'profile', p.partition_key, p.summary, NULL, NULL, NULL, p.updated_at
  FROM amrita_memory.profile p
 WHERE p.partition_key = p_profile_key AND p.summary <> ''
$fn$;

COMMENT ON FUNCTION amrita_memory.memory_block_v1(text[], text, text[], integer, vector, integer, text) IS
    'Everything one chat turn injects, in one round trip: memos, loaded scopes, top memories by importance, the memories nearest to the query, the profile summary (kind says which). Generic plan: planned once per connection.';
