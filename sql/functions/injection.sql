-- Per-turn injection: memory_block_v3 is the one round trip of every chat turn.


-- The candidates of memory_block_v3: for each partition of p_keys, its p_limit memories
-- first by (importance desc, updated_at desc, id) — the caller merges them and keeps
-- p_limit of the union, which is the union's top p_limit, since each row of that top is in
-- its own partition's top p_limit.
--
-- Why per partition: ordering the union reads every row of every scope (global and a
-- large group: tens of thousands of heap pages a turn at a million memories). A
-- partition with its own block index (ix_memory_top_<md5 of the key>, maintenance/ann.py:
-- global and the partitions with an HNSW index, when [injection] is enabled) gives its
-- top p_limit in index order: p_limit rows read. That index is partial, so only a plan
-- made for that partition's key can use it (a generic plan cannot prove the predicate):
-- such a partition gets a one-shot statement (EXECUTE, its key bound as a constant), the
-- others one statement planned once per connection.
--   psql> SELECT partition_key, importance, left(content, 30)
--           FROM amrita_memory.block_candidates_v1(ARRAY['global', 'qq_private_10001'], 20);
CREATE OR REPLACE FUNCTION amrita_memory.block_candidates_v1(
    p_keys text[],
    p_limit integer
) RETURNS TABLE (
    partition_key text,
    content text,
    id text,
    importance smallint,
    category text,
    updated_at timestamptz
)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $fn$
DECLARE
    v_indexed text[];
    v_plain text[];
    v_key text;
BEGIN
    SELECT coalesce(array_agg(k.key) FILTER (WHERE x.indexed), '{}'),
           coalesce(array_agg(k.key) FILTER (WHERE NOT x.indexed), '{}')
      INTO v_indexed, v_plain
      FROM unnest(p_keys) AS k(key)
     CROSS JOIN LATERAL (
            SELECT EXISTS (
                SELECT 1
                  FROM pg_catalog.pg_class c
                  JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid
                 WHERE c.relnamespace = 'amrita_memory'::regnamespace
                   AND c.relname = 'ix_memory_top_' || left(md5(k.key), 24)
                   AND i.indisvalid) AS indexed) x;
    RETURN QUERY
    SELECT c.partition_key, c.content, c.id, c.importance, c.category, c.updated_at
      FROM unnest(v_plain) AS k(key)
     CROSS JOIN LATERAL (
            SELECT m.partition_key, m.content, m.id, m.importance, m.category, m.updated_at
              FROM amrita_memory.memory m
             WHERE m.partition_key = k.key
             ORDER BY m.importance DESC, m.updated_at DESC, m.id
             LIMIT p_limit) c;
    FOREACH v_key IN ARRAY v_indexed LOOP
        -- dynamic: planned for this partition, so that its partial index is seen
        RETURN QUERY EXECUTE $q$
            SELECT m.partition_key, m.content, m.id, m.importance, m.category, m.updated_at
              FROM amrita_memory.memory m
             WHERE m.partition_key = $1
             ORDER BY m.importance DESC, m.updated_at DESC, m.id
             LIMIT $2
        $q$ USING v_key, p_limit;
    END LOOP;
END
$fn$;
COMMENT ON FUNCTION amrita_memory.block_candidates_v1(text[], integer) IS
'The memory block''s candidates, per partition: the first p_limit of each by importance, update time and id (the caller merges them); a partition with its own block index (ix_memory_top_*) read through it by a statement planned for its key.';


-- memory_block_v2 with the candidates read per partition (block_candidates_v1): the same
-- rows, in the same order, for every input; a partition with its own block index gives
-- its first p_limit in index order instead of having every row read and sorted.
-- Everything else is v2's (below): the memos, loaded and paused scopes, the version row,
-- the relevant memories, the profile summary, one generic plan per connection.
--   psql> SELECT kind, partition_key, left(content, 30)
--           FROM amrita_memory.memory_block_v3(ARRAY['qq_private_10001'], 'qq_private_10001',
--                ARRAY['global', 'qq_private_10001'], 20, NULL, 0, NULL, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.memory_block_v3(
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
    SELECT b.partition_key, b.content, b.id, b.importance, b.category, b.updated_at
      FROM amrita_memory.block_candidates_v1((SELECT keys.k FROM keys), p_limit) b
     ORDER BY b.importance DESC, b.updated_at DESC, b.id
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
  ORDER BY halfvec_l2_squared_distance(m.embedding, (SELECT p_query::halfvec)), m.id
  LIMIT p_top_k)
UNION ALL
SELECT 'profile', p.partition_key, p.summary, NULL, NULL, NULL, p.updated_at
  FROM amrita_memory.profile p
 WHERE p.partition_key = p_profile_key AND p.summary <> ''
   AND NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = p.partition_key)
$fn$;

COMMENT ON FUNCTION amrita_memory.memory_block_v3(text[], text, text[], integer, vector, integer, text, bigint) IS
'The per-turn block in one round trip, as memory_block_v2 (memos, loaded scopes, memories, relevant memories, profile summary, paused and version rows) with the candidates read per partition by block_candidates_v1, through a partition''s block index where it has one. Generic plan.';



-- previous release: 0.14 calls it during a rolling upgrade; the next release drops it.
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
  ORDER BY halfvec_l2_squared_distance(m.embedding, (SELECT p_query::halfvec)), m.id
  LIMIT p_top_k)
UNION ALL
SELECT 'profile', p.partition_key, p.summary, NULL, NULL, NULL, p.updated_at
  FROM amrita_memory.profile p
 WHERE p.partition_key = p_profile_key AND p.summary <> ''
   AND NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = p.partition_key)
$fn$;
COMMENT ON FUNCTION amrita_memory.memory_block_v2(text[], text, text[], integer, vector, integer, text, bigint) IS
'The per-turn block in one round trip: the memos, loaded scopes, memories and relevant memories of the chat''s partitions and the profile summary, none of a paused partition (one row of kind paused names each paused partition asked for), and a version row: the candidates are sent only when p_known differs from it. Generic plan.';
