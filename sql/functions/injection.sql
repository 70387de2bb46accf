-- Per-turn injection: memory_block_v2 is the one round trip of every chat turn.


-- The memos of p_memo_keys (non-empty ones), the scopes chat p_chat_key has loaded, up to
-- p_limit memories of p_scope_keys plus the loaded scopes (importance desc, then most
-- recently updated), the p_top_k memories of those partitions nearest to p_query (none
-- when p_top_k = 0 or p_query is NULL), and the profile summary of p_profile_key (none
-- when NULL). kind says which part a row belongs to: memo | loaded | memory | relevant |
-- profile | paused | version.
--
-- A partition in amrita_memory.paused_partition keeps its memories but is not injected:
-- no memo, no memories, no relevant memories, no profile summary, and a loaded scope that
-- is paused is not loaded. One row of kind 'paused' names each paused partition among the
-- keys asked for (p_memo_keys, p_scope_keys, the loaded scopes, p_profile_key), so the
-- caller can say what was left out (the inspector) without a second query.
-- One row of kind 'version' carries (in id) a fingerprint of the candidates — their ids,
-- importance, category, content, update time, and the partitions read. When p_known equals
-- it, the candidates are not sent again: the caller still holds them from an earlier turn
-- (memories rarely change between turns; sending and decoding 200 rows was most of a turn's
-- cost, bench/bench_injection.py). p_known NULL always sends them.
--
-- Why a function and not a prepared statement: the statement runs every turn with
-- different keys, and a prepared statement is planned again for its first five runs
-- per connection and whenever PostgreSQL prefers a custom plan -- measured 1.5 ms of
-- planning per turn, more than the execution. A SQL function with plan_cache_mode =
-- force_generic_plan plans its body once per connection and reuses the plan; every
-- partition filter is `partition_key = ANY(array)`, which the generic plan reads
-- through the partition btree as well (bench/bench_injection.py).
--   psql> SELECT kind, partition_key, left(content, 30)
--           FROM amrita_memory.memory_block_v2(ARRAY['qq_private_10001'], 'qq_private_10001',
--                ARRAY['global', 'qq_private_10001'], 20, NULL, 0, NULL, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.memory_block_v2(
    p_memo_keys text[],
    p_chat_key text,
    p_scope_keys text[],
    p_limit integer,
    p_query vector,
    p_top_k integer,
    p_profile_key text,
    p_known bigint
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
), asked AS (
    SELECT array_cat(array_cat(p_memo_keys, p_scope_keys),
                     array_cat(coalesce((SELECT array_agg(loaded.scope_key) FROM loaded),
                                        '{}'::text[]),
                               CASE WHEN p_profile_key IS NULL THEN '{}'::text[]
                                    ELSE ARRAY[p_profile_key] END)) AS k
), paused AS (
    SELECT DISTINCT pp.partition_key
      FROM amrita_memory.paused_partition pp
     WHERE pp.partition_key = ANY((SELECT asked.k FROM asked)::text[])
), keys AS (
    SELECT coalesce(array_agg(DISTINCT u.k), '{}'::text[]) AS k
      FROM (SELECT unnest(p_scope_keys) AS k
            UNION ALL
            SELECT loaded.scope_key FROM loaded) u
     WHERE NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = u.k)
), cand AS (
    SELECT m.partition_key, m.content, m.id, m.importance, m.category, m.updated_at
      FROM amrita_memory.memory m
     WHERE m.partition_key = ANY((SELECT keys.k FROM keys)::text[])
     ORDER BY m.importance DESC, m.updated_at DESC, m.id
     LIMIT p_limit
), ver AS (
    SELECT coalesce(bit_xor(hashtextextended(
               c.id || ':' || c.importance || ':' || coalesce(c.category, '') || ':'
               || extract(epoch FROM c.updated_at) || ':' || c.content, 0)), 0)
           # hashtextextended(array_to_string((SELECT keys.k FROM keys), ','), count(*)) AS v
      FROM cand c
)
SELECT 'paused'::text, paused.partition_key, NULL::text, NULL::text, NULL::smallint,
       NULL::text, NULL::timestamptz
  FROM paused
UNION ALL
SELECT 'memo', o.partition_key, o.content, NULL, NULL, NULL, o.updated_at
  FROM amrita_memory.memo o
 WHERE o.partition_key = ANY(p_memo_keys) AND o.content <> ''
   AND NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = o.partition_key)
UNION ALL
SELECT 'loaded', l.scope_key, NULL, NULL, NULL, NULL, l.loaded_at
  FROM loaded l
 WHERE NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = l.scope_key)
UNION ALL
SELECT 'version', NULL, NULL, (SELECT ver.v FROM ver)::text, NULL, NULL, NULL
UNION ALL
SELECT 'memory', c.partition_key, c.content, c.id, c.importance, c.category, c.updated_at
  FROM cand c
 WHERE p_known IS DISTINCT FROM (SELECT ver.v FROM ver)
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
   AND NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = p.partition_key)
$fn$;
COMMENT ON FUNCTION amrita_memory.memory_block_v2(text[], text, text[], integer, vector, integer, text, bigint) IS
'The per-turn block in one round trip: the memos, loaded scopes, memories and relevant memories of the chat''s partitions and the profile summary, none of a paused partition (one row of kind paused names each paused partition asked for), and a version row: the candidates are sent only when p_known differs from it. Generic plan.';
