-- 0062_halfvec's upgrade, frozen with it (never edited): Stored embeddings as halfvec: memory, knowledge and the re-embed's staging hold half-precision vectors, the per-partition HNSW indexes are halfvec_l2_ops over (embedding::halfvec(n)), and the search functions compute halfvec distances under their own names (0.14.1's bodies cannot run on a halfvec column, and 0.14.1 calls them during a rolling upgrade); the weighted fusion counts a similarity spread under 1e-3 as no signal (was 1e-6: the noise of half-precision vectors).

-- Search the knowledge base by mode (read this file's header): the p_top_k best entries,
-- best first, with the L2 distance of the summary vector (NULL in keyword mode or for an
-- entry of another dimension), the BM25 keyword score (0 = no shared token) and the score
-- they are ordered by. One statement: both sides and the fusion.
--   psql> SELECT kid, title, distance, keyword_score, score
--           FROM amrita_memory.knowledge_search_v2(NULL, ARRAY['科目', '二'], 'keyword', 5);
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_search_v2(
    p_query vector,
    p_tokens text[],
    p_mode text,
    p_top_k integer,
    p_fusion text DEFAULT 'weighted',
    p_rrf_k float8 DEFAULT 60,
    p_weight float8 DEFAULT 0.5)
RETURNS TABLE (kid text, title text, summary text, distance float8, keyword_score float8,
               score float8)
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    v_dim integer := vector_dims(p_query);
    v_tsq tsquery;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('vector', 'keyword', 'hybrid') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('knowledge_search_v2: unknown mode %L (vector, keyword or hybrid)', p_mode);
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('knowledge_search_v2: unknown fusion %L (rrf or weighted)', p_fusion);
    END IF;
    IF p_mode <> 'keyword' AND p_query IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('knowledge_search_v2: mode %s needs the query vector', p_mode);
    END IF;
    IF p_mode <> 'vector' THEN
        v_tsq := amrita_memory.tokens_tsquery_v1(p_tokens);
    END IF;
    RETURN QUERY
    WITH stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(k.search_len), 1), 1)::float8 AS avglen
          FROM amrita_memory.knowledge k
    ),
    -- the entries sharing a token with the query (GIN), then their (entry, query token)
    -- pairs: one tsvector lookup per query token, not an unnest of every entry's tokens
    -- (a body gives hundreds: 1000 matching entries took 140 ms unnested, bench_knowledge.py)
    terms AS MATERIALIZED (
        SELECT t AS lexeme, amrita_memory.tokens_tsquery_v1(ARRAY[t]) AS tsq
          FROM (SELECT DISTINCT t FROM unnest(p_tokens) t WHERE t <> '') d
    ),
    matched AS MATERIALIZED (
        SELECT k.kid, k.search_len, k.search_tokens
          FROM amrita_memory.knowledge k
         WHERE v_tsq IS NOT NULL AND k.search_tokens @@ v_tsq
    ),
    hit AS MATERIALIZED (
        SELECT m.kid, m.search_len AS len, q.lexeme
          FROM matched m
          CROSS JOIN terms q
         WHERE m.search_tokens @@ q.tsq
    ),
    df AS (
        SELECT h.lexeme, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
          FROM hit h CROSS JOIN stats s
         GROUP BY h.lexeme, s.n
    ),
    kw AS (
        SELECT h.kid, sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.kid
    ),
    c AS (
        SELECT k.kid, k.title, k.summary, kw.bm25,
               CASE WHEN p_mode <> 'keyword' AND vector_dims(k.embedding) = v_dim
                    THEN k.embedding <-> (SELECT p_query::halfvec) END AS distance
          FROM amrita_memory.knowledge k
          LEFT JOIN kw ON kw.kid = k.kid
         WHERE p_mode <> 'keyword' OR kw.bm25 IS NOT NULL
    ),
    ranked AS (
        SELECT c.*,
               CASE WHEN c.distance IS NOT NULL THEN 1.0 / (1.0 + c.distance * c.distance) END
                   AS similarity,
               CASE WHEN c.distance IS NOT NULL
                    THEN row_number() OVER (ORDER BY c.distance NULLS LAST, c.kid) END AS vrank,
               CASE WHEN c.bm25 IS NOT NULL
                    THEN row_number() OVER (ORDER BY c.bm25 DESC NULLS LAST, c.kid) END AS krank
          FROM c
         WHERE CASE p_mode WHEN 'vector' THEN c.distance IS NOT NULL
                           WHEN 'hybrid' THEN c.distance IS NOT NULL OR c.bm25 IS NOT NULL
                           ELSE true END
    ),
    fused AS (
        SELECT r.*,
               CASE p_mode
                   WHEN 'vector' THEN r.similarity
                   WHEN 'keyword' THEN r.bm25
                   ELSE CASE p_fusion
                       WHEN 'rrf' THEN coalesce(1.0 / (p_rrf_k + r.vrank), 0)
                                       + coalesce(1.0 / (p_rrf_k + r.krank), 0)
                       ELSE (1 - p_weight)
                                * coalesce(CASE WHEN max(r.similarity) OVER () - min(r.similarity) OVER () > 1e-3
                                                THEN (r.similarity - min(r.similarity) OVER ())
                                                     / (max(r.similarity) OVER () - min(r.similarity) OVER ())
                                                WHEN r.similarity IS NOT NULL THEN 1 END, 0)
                            + p_weight * coalesce(r.bm25 / nullif(max(r.bm25) OVER (), 0), 0)
                   END
               END::float8 AS score
          FROM ranked r
    )
    SELECT f.kid, f.title, f.summary, f.distance::float8, coalesce(f.bm25, 0)::float8, f.score
      FROM fused f
     ORDER BY f.score DESC, f.distance NULLS LAST, f.kid
     LIMIT greatest(p_top_k, 0);
END
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_search_v2(vector, text[], text, integer, text, float8, float8) IS
'Knowledge search in one statement: mode vector (the summary vector''s L2 distance, then kid), keyword (BM25 over title + summary + body tokens) or hybrid (rrf or weighted fusion, as the memories''; no decay). SQLSTATE 22023 for a bad mode or fusion.';

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

-- Hybrid mode, rrf fusion, over a partition's candidates (search_memories_v6):
-- 1/(p_rrf_k + vector rank) + 1/(p_rrf_k + keyword rank) (the keyword term only for a row
-- sharing a token), times the decay factor. The vector rank orders every row scored by
-- (distance, created_at, id); the keyword rank the matching rows by (bm25 desc,
-- created_at, id).
--   psql> SELECT id, decay_score FROM amrita_memory.score_hybrid_rrf_v6('QQPlatform_Private_10001',
--           (SELECT embedding::vector FROM amrita_memory.memory LIMIT 1), ARRAY['猫'],
--           amrita_memory.tokens_tsquery_v1(ARRAY['猫']), 5, now(), true, 30, 1, 0.05,
--           NULL, NULL, NULL, NULL, NULL, 60, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.score_hybrid_rrf_v6(
    p_partition text,
    p_query vector,
    p_tokens text[],
    p_tsq tsquery,
    p_top_k integer,
    p_now timestamptz,
    p_decay boolean,
    p_base_days float8,
    p_boost float8,
    p_floor float8,
    p_importance_min integer,
    p_importance_max integer,
    p_scope text,
    p_tags text[],
    p_category text,
    p_rrf_k float8,
    p_ids text[])
RETURNS TABLE (
    id text,
    partition_key text,
    scope text,
    content text,
    tags text[],
    importance smallint,
    category text,
    source text,
    author text,
    created_at timestamptz,
    updated_at timestamptz,
    distance float8,
    decay_score float8,
    age_days float8,
    keyword_score float8)
LANGUAGE sql STABLE
AS $$
    WITH c AS MATERIALIZED (
        SELECT m.id, m.created_at,
               CASE WHEN m.search_tokens @@ p_tsq THEN m.search_tokens END AS matched,
               length(m.search_tokens) AS len,
               halfvec_l2_squared_distance(m.embedding, (SELECT p_query::halfvec)) AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM (SELECT r.id, r.created_at, r.importance, r.scope, r.tags, r.category,
                       r.search_tokens, r.embedding
                  FROM amrita_memory.memory r
                 WHERE p_ids IS NULL AND r.partition_key = p_partition
                UNION ALL
                SELECT y.id, y.created_at, y.importance, y.scope, y.tags, y.category,
                       y.search_tokens, y.embedding
                  FROM (SELECT DISTINCT x.id FROM unnest(p_ids) AS x(id)) x
                  JOIN amrita_memory.memory y
                    ON y.partition_key = p_partition AND y.id = x.id) m
         WHERE amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    hit AS MATERIALIZED (
        SELECT c.id, c.created_at, c.len, u.lexeme
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) u
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen
          FROM c
    ),
    df AS (
        SELECT h.lexeme, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
          FROM hit h CROSS JOIN stats s
         GROUP BY h.lexeme, s.n
    ),
    kw AS (
        SELECT h.id, h.created_at,
               sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.id, h.created_at
    ),
    kr AS (
        SELECT k.id, k.bm25,
               row_number() OVER (ORDER BY k.bm25 DESC NULLS LAST, k.created_at, k.id) AS krank
          FROM kw k
    ),
    top AS (
        SELECT v.id, v.created_at, v.distance, v.age, k.bm25, x.score
          FROM (SELECT c.id, c.created_at, c.distance, c.age, c.half_life,
                       row_number() OVER (ORDER BY c.distance, c.created_at, c.id) AS vrank
                  FROM c) v
          LEFT JOIN kr k ON k.id = v.id
         CROSS JOIN LATERAL (
                SELECT 1.0 / (p_rrf_k + v.vrank) + coalesce(1.0 / (p_rrf_k + k.krank), 0)
                       AS relevance) f
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN f.relevance * amrita_memory.decay_factor_v1(v.age, v.half_life, p_floor)
                            ELSE f.relevance END AS score) x
         ORDER BY x.score DESC, v.distance, v.created_at, v.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, t.distance, t.score, t.age,
           coalesce(t.bm25, 0)
      FROM top t
      JOIN amrita_memory.memory m ON m.partition_key = p_partition AND m.id = t.id
     ORDER BY t.score DESC, t.distance, t.created_at, t.id
$$;
COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v6(text, vector, text[], tsquery, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, float8, text[]) IS
'Hybrid mode, rrf fusion, of search_memories_v6: reciprocal ranks of the vector and keyword sides times the decay factor, on narrow rows; the top k joined back for their content.';

-- Hybrid mode, rrf fusion, every row of the partition (matching lexemes by intersection):
-- 1/(p_rrf_k + vector rank) + 1/(p_rrf_k + keyword rank) (the keyword term only for a row
-- sharing a token), times the decay factor. The vector rank orders every row scored by
-- (distance, created_at, id); the keyword rank the matching rows by (bm25 desc,
-- created_at, id).
--   psql> SELECT id, decay_score FROM amrita_memory.score_hybrid_rrf_v8('QQPlatform_Private_10001',
--           (SELECT embedding::vector FROM amrita_memory.memory LIMIT 1), ARRAY['猫'],
--           amrita_memory.tokens_tsquery_v1(ARRAY['猫']), 5, now(), true, 30, 1, 0.05,
--           NULL, NULL, NULL, NULL, NULL, 60);
CREATE OR REPLACE FUNCTION amrita_memory.score_hybrid_rrf_v8(
    p_partition text,
    p_query vector,
    p_tokens text[],
    p_tsq tsquery,
    p_top_k integer,
    p_now timestamptz,
    p_decay boolean,
    p_base_days float8,
    p_boost float8,
    p_floor float8,
    p_importance_min integer,
    p_importance_max integer,
    p_scope text,
    p_tags text[],
    p_category text,
    p_rrf_k float8)
RETURNS TABLE (
    id text,
    partition_key text,
    scope text,
    content text,
    tags text[],
    importance smallint,
    category text,
    source text,
    author text,
    created_at timestamptz,
    updated_at timestamptz,
    distance float8,
    decay_score float8,
    age_days float8,
    keyword_score float8)
LANGUAGE sql STABLE
AS $$
    WITH c AS MATERIALIZED (
        SELECT m.ctid AS tid, m.id, m.created_at,
               CASE WHEN m.search_tokens @@ p_tsq
                    THEN tsvector_to_array(ts_delete(m.search_tokens, tsvector_to_array(
                             ts_delete(m.search_tokens, p_tokens)))) END AS matched,
               length(m.search_tokens) AS len,
               halfvec_l2_squared_distance(m.embedding, (SELECT p_query::halfvec)) AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen
          FROM c
    ),
    hit AS (
        SELECT c.id, c.created_at, c.len, count(*) OVER (PARTITION BY u.lexeme) AS df
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) AS u(lexeme)
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    kw AS (
        SELECT h.id, h.created_at,
               sum(ln(1 + (s.n - h.df + 0.5) / (h.df + 0.5))
                   * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h CROSS JOIN stats s
         GROUP BY h.id, h.created_at
    ),
    kr AS (
        SELECT k.id, k.bm25,
               row_number() OVER (ORDER BY k.bm25 DESC NULLS LAST, k.created_at, k.id) AS krank
          FROM kw k
    ),
    top AS (
        SELECT v.tid, v.id, v.created_at, v.distance, v.age, k.bm25, x.score
          FROM (SELECT c.tid, c.id, c.created_at, c.distance, c.age, c.half_life,
                       row_number() OVER (ORDER BY c.distance, c.created_at, c.id) AS vrank
                  FROM c) v
          LEFT JOIN kr k ON k.id = v.id
         CROSS JOIN LATERAL (
                SELECT 1.0 / (p_rrf_k + v.vrank) + coalesce(1.0 / (p_rrf_k + k.krank), 0)
                       AS relevance) f
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN f.relevance * amrita_memory.decay_factor_v1(v.age, v.half_life, p_floor)
                            ELSE f.relevance END AS score) x
         ORDER BY x.score DESC, v.distance, v.created_at, v.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, t.distance, t.score, t.age,
           coalesce(t.bm25, 0)
      FROM top t
      JOIN amrita_memory.memory m ON m.ctid = t.tid
     ORDER BY t.score DESC, t.distance, t.created_at, t.id
$$;
COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v8(text, vector, text[], tsquery, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, float8) IS
'Hybrid mode, rrf fusion, of search_memories_v8 over every row of the partition: reciprocal ranks of the vector and keyword sides times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

-- Hybrid mode, weighted fusion, over a partition's candidates (search_memories_v6):
-- (1 - p_weight) × similarity min-max-normalised over the rows scored (1
-- when the spread is under 1e-3) + p_weight × bm25 / max bm25, times the decay factor.
--   psql> SELECT id, decay_score FROM amrita_memory.score_hybrid_weighted_v6(
--           'QQPlatform_Private_10001', (SELECT embedding::vector FROM amrita_memory.memory LIMIT 1),
--           ARRAY['猫'], amrita_memory.tokens_tsquery_v1(ARRAY['猫']), 5, now(), true, 30, 1,
--           0.05, NULL, NULL, NULL, NULL, NULL, 0.5, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.score_hybrid_weighted_v6(
    p_partition text,
    p_query vector,
    p_tokens text[],
    p_tsq tsquery,
    p_top_k integer,
    p_now timestamptz,
    p_decay boolean,
    p_base_days float8,
    p_boost float8,
    p_floor float8,
    p_importance_min integer,
    p_importance_max integer,
    p_scope text,
    p_tags text[],
    p_category text,
    p_weight float8,
    p_ids text[])
RETURNS TABLE (
    id text,
    partition_key text,
    scope text,
    content text,
    tags text[],
    importance smallint,
    category text,
    source text,
    author text,
    created_at timestamptz,
    updated_at timestamptz,
    distance float8,
    decay_score float8,
    age_days float8,
    keyword_score float8)
LANGUAGE sql STABLE
AS $$
    WITH c AS MATERIALIZED (
        SELECT m.id, m.created_at,
               CASE WHEN m.search_tokens @@ p_tsq THEN m.search_tokens END AS matched,
               length(m.search_tokens) AS len,
               halfvec_l2_squared_distance(m.embedding, (SELECT p_query::halfvec)) AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM (SELECT r.id, r.created_at, r.importance, r.scope, r.tags, r.category,
                       r.search_tokens, r.embedding
                  FROM amrita_memory.memory r
                 WHERE p_ids IS NULL AND r.partition_key = p_partition
                UNION ALL
                SELECT y.id, y.created_at, y.importance, y.scope, y.tags, y.category,
                       y.search_tokens, y.embedding
                  FROM (SELECT DISTINCT x.id FROM unnest(p_ids) AS x(id)) x
                  JOIN amrita_memory.memory y
                    ON y.partition_key = p_partition AND y.id = x.id) m
         WHERE amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    hit AS MATERIALIZED (
        SELECT c.id, c.len, u.lexeme
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) u
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen,
               max(amrita_memory.similarity_v1(c.distance)) AS smax,
               min(amrita_memory.similarity_v1(c.distance)) AS smin
          FROM c
    ),
    df AS (
        SELECT h.lexeme, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
          FROM hit h CROSS JOIN stats s
         GROUP BY h.lexeme, s.n
    ),
    kw AS (
        SELECT h.id, sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.id
    ),
    kmax AS (
        SELECT max(k.bm25) AS bmax FROM kw k
    ),
    top AS (
        SELECT c.id, c.created_at, c.distance, c.age, k.bm25, x.score
          FROM c
          LEFT JOIN kw k ON k.id = c.id
         CROSS JOIN stats s
         CROSS JOIN kmax b
         CROSS JOIN LATERAL (
                SELECT (1 - p_weight)
                           * CASE WHEN s.smax - s.smin > 1e-3
                                  THEN (amrita_memory.similarity_v1(c.distance) - s.smin)
                                       / (s.smax - s.smin)
                                  ELSE 1 END
                       + p_weight * coalesce(k.bm25 / nullif(b.bmax, 0), 0) AS relevance) f
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN f.relevance * amrita_memory.decay_factor_v1(c.age, c.half_life, p_floor)
                            ELSE f.relevance END AS score) x
         ORDER BY x.score DESC, c.distance, c.created_at, c.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, t.distance, t.score, t.age,
           coalesce(t.bm25, 0)
      FROM top t
      JOIN amrita_memory.memory m ON m.partition_key = p_partition AND m.id = t.id
     ORDER BY t.score DESC, t.distance, t.created_at, t.id
$$;
COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v6(text, vector, text[], tsquery, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, float8, text[]) IS
'Hybrid mode, weighted fusion, of search_memories_v6: normalised similarity and bm25 / max bm25, weighted, times the decay factor, on narrow rows; the top k joined back for their content.';

-- Hybrid mode, weighted fusion, every row of the partition (matching lexemes by
-- intersection):
-- (1 - p_weight) × similarity min-max-normalised over the rows scored (1 when the spread
-- is under 1e-3) + p_weight × bm25 / max bm25, times the decay factor.
--   psql> SELECT id, decay_score FROM amrita_memory.score_hybrid_weighted_v8(
--           'QQPlatform_Private_10001', (SELECT embedding::vector FROM amrita_memory.memory LIMIT 1),
--           ARRAY['猫'], amrita_memory.tokens_tsquery_v1(ARRAY['猫']), 5, now(), true, 30, 1,
--           0.05, NULL, NULL, NULL, NULL, NULL, 0.5);
CREATE OR REPLACE FUNCTION amrita_memory.score_hybrid_weighted_v8(
    p_partition text,
    p_query vector,
    p_tokens text[],
    p_tsq tsquery,
    p_top_k integer,
    p_now timestamptz,
    p_decay boolean,
    p_base_days float8,
    p_boost float8,
    p_floor float8,
    p_importance_min integer,
    p_importance_max integer,
    p_scope text,
    p_tags text[],
    p_category text,
    p_weight float8)
RETURNS TABLE (
    id text,
    partition_key text,
    scope text,
    content text,
    tags text[],
    importance smallint,
    category text,
    source text,
    author text,
    created_at timestamptz,
    updated_at timestamptz,
    distance float8,
    decay_score float8,
    age_days float8,
    keyword_score float8)
LANGUAGE sql STABLE
AS $$
    WITH c AS MATERIALIZED (
        SELECT m.ctid AS tid, m.id, m.created_at,
               CASE WHEN m.search_tokens @@ p_tsq
                    THEN tsvector_to_array(ts_delete(m.search_tokens, tsvector_to_array(
                             ts_delete(m.search_tokens, p_tokens)))) END AS matched,
               length(m.search_tokens) AS len,
               halfvec_l2_squared_distance(m.embedding, (SELECT p_query::halfvec)) AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen,
               max(amrita_memory.similarity_v1(c.distance)) AS smax,
               min(amrita_memory.similarity_v1(c.distance)) AS smin
          FROM c
    ),
    hit AS (
        SELECT c.id, c.len, count(*) OVER (PARTITION BY u.lexeme) AS df
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) AS u(lexeme)
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    kw AS (
        SELECT h.id,
               sum(ln(1 + (s.n - h.df + 0.5) / (h.df + 0.5))
                   * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h CROSS JOIN stats s
         GROUP BY h.id
    ),
    kmax AS MATERIALIZED (  -- one row, computed once (inlined, it was re-aggregated per row)
        SELECT max(k.bm25) AS bmax FROM kw k
    ),
    top AS (
        SELECT c.tid, c.id, c.created_at, c.distance, c.age, k.bm25, x.score
          FROM c
          LEFT JOIN kw k ON k.id = c.id
         CROSS JOIN stats s
         CROSS JOIN kmax b
         CROSS JOIN LATERAL (
                SELECT (1 - p_weight)
                           * CASE WHEN s.smax - s.smin > 1e-3
                                  THEN (amrita_memory.similarity_v1(c.distance) - s.smin)
                                       / (s.smax - s.smin)
                                  ELSE 1 END
                       + p_weight * coalesce(k.bm25 / nullif(b.bmax, 0), 0) AS relevance) f
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN f.relevance * amrita_memory.decay_factor_v1(c.age, c.half_life, p_floor)
                            ELSE f.relevance END AS score) x
         ORDER BY x.score DESC, c.distance, c.created_at, c.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, t.distance, t.score, t.age,
           coalesce(t.bm25, 0)
      FROM top t
      JOIN amrita_memory.memory m ON m.ctid = t.tid
     ORDER BY t.score DESC, t.distance, t.created_at, t.id
$$;
COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v8(text, vector, text[], tsquery, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, float8) IS
'Hybrid mode, weighted fusion, of search_memories_v8 over every row of the partition: normalised similarity and bm25 / max bm25, weighted, times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

-- Score one partition's rows (or the candidates p_ids of it) for a query: distance,
-- bm25, fused score, decay, every mode in one body: p_ids NULL = every row of the
-- partition that passes the filters. BM25's statistics (row count, document frequency,
-- average length) are those of the rows scored.
CREATE OR REPLACE FUNCTION amrita_memory.score_memories_v1(
    p_partition text,
    p_query vector,
    p_tokens text[],
    p_mode text,
    p_top_k integer,
    p_now timestamptz,
    p_decay boolean,
    p_base_days float8,
    p_boost float8,
    p_floor float8,
    p_importance_min integer,
    p_importance_max integer,
    p_scope text,
    p_tags text[],
    p_category text,
    p_fusion text,
    p_rrf_k float8,
    p_weight float8,
    p_ids text[])
RETURNS TABLE (
    id text,
    partition_key text,
    scope text,
    content text,
    tags text[],
    importance smallint,
    category text,
    source text,
    author text,
    created_at timestamptz,
    updated_at timestamptz,
    distance float8,
    decay_score float8,
    age_days float8,
    keyword_score float8)
LANGUAGE sql STABLE
AS $$
    WITH c AS MATERIALIZED (
        SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
               m.source, m.author, m.created_at, m.updated_at, m.search_tokens,
               CASE WHEN p_mode = 'keyword' THEN NULL
                    ELSE halfvec_l2_squared_distance(m.embedding, (SELECT p_query::halfvec)) END AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND (p_ids IS NULL OR m.id = ANY (p_ids))
           AND amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    -- (row, query token) pairs. The rows are already in hand (c), so no index and no
    -- tsquery: unnesting a memory's few dozen tokens is cheaper than building a tsquery
    -- in a function call per search (measured: 2x the whole search at 100 rows).
    hit AS MATERIALIZED (
        SELECT c.id, length(c.search_tokens) AS len, u.lexeme
          FROM c
          CROSS JOIN LATERAL unnest(c.search_tokens) u
         WHERE p_mode <> 'vector'
           AND u.lexeme = ANY (p_tokens)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(length(c.search_tokens)), 1), 1)::float8 AS avglen
          FROM c
    ),
    df AS (
        SELECT h.lexeme, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
          FROM hit h CROSS JOIN stats s
         GROUP BY h.lexeme, s.n
    ),
    kw AS (
        SELECT h.id, sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.id
    ),
    ranked AS (
        SELECT c.*, kw.bm25,
               amrita_memory.similarity_v1(c.distance) AS similarity,
               row_number() OVER (ORDER BY c.distance, c.created_at, c.id) AS vrank,
               CASE WHEN kw.bm25 IS NOT NULL
                    THEN row_number() OVER (ORDER BY kw.bm25 DESC NULLS LAST, c.created_at, c.id)
               END AS krank
          FROM c LEFT JOIN kw ON kw.id = c.id
         WHERE p_mode <> 'keyword' OR kw.bm25 IS NOT NULL
    ),
    fused AS (
        SELECT r.*,
               CASE p_mode
                   WHEN 'vector' THEN r.similarity
                   WHEN 'keyword' THEN r.bm25
                   ELSE CASE p_fusion
                       WHEN 'rrf' THEN 1.0 / (p_rrf_k + r.vrank)
                                       + coalesce(1.0 / (p_rrf_k + r.krank), 0)
                       ELSE (1 - p_weight)
                                * CASE WHEN max(r.similarity) OVER () - min(r.similarity) OVER () > 1e-3
                                       THEN (r.similarity - min(r.similarity) OVER ())
                                            / (max(r.similarity) OVER () - min(r.similarity) OVER ())
                                       ELSE 1 END
                            + p_weight * coalesce(r.bm25 / nullif(max(r.bm25) OVER (), 0), 0)
                   END
               END AS relevance
          FROM ranked r
    )
    SELECT f.id, f.partition_key, f.scope, f.content, f.tags, f.importance, f.category,
           f.source, f.author, f.created_at, f.updated_at, f.distance, x.score, f.age,
           coalesce(f.bm25, 0)
      FROM fused f
     CROSS JOIN LATERAL (
            SELECT CASE WHEN p_decay
                        THEN f.relevance * amrita_memory.decay_factor_v1(f.age, f.half_life, p_floor)
                        ELSE f.relevance END AS score) x
     ORDER BY x.score DESC, f.distance, f.created_at, f.id
     LIMIT p_top_k
$$;
COMMENT ON FUNCTION amrita_memory.score_memories_v1(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, text, float8, float8, text[]) IS
'Score the rows of one partition (all, or the candidate ids p_ids), every mode in one body: vector similarity, BM25 over the search tokens, fusion by mode (vector | keyword | hybrid; rrf or weighted), times the decay factor. The Chroma backend''s keyword candidates.';

-- Vector mode, HNSW path (a partition listed in ann_index, with its own partial index):
-- the p_candidates nearest rows that pass the filters, by the index, re-ranked by decay
-- score (decay_score_v1: the exact path's expression). Dynamic SQL because the partial
-- index's predicate (partition and dimension literals) must appear verbatim for the
-- planner to use it, and the ORDER BY must be the index's expression, (embedding::
-- halfvec(n)) <-> query::halfvec(n) (sql/queries/ann.sql); hnsw.iterative_scan (pgvector ≥ 0.8) keeps the index yielding rows
-- while filters reject some. Both settings last until the end of the transaction.
--   psql> SELECT id FROM amrita_memory.search_vector_ann_v5('QQPlatform_Group_big',
--           (SELECT embedding::vector FROM amrita_memory.memory LIMIT 1), 5, now(), true, 30, 1,
--           0.05, NULL, NULL, NULL, NULL, NULL, 200);
CREATE OR REPLACE FUNCTION amrita_memory.search_vector_ann_v5(
    p_partition text,
    p_query vector,
    p_top_k integer,
    p_now timestamptz,
    p_decay boolean,
    p_base_days float8,
    p_boost float8,
    p_floor float8,
    p_importance_min integer,
    p_importance_max integer,
    p_scope text,
    p_tags text[],
    p_category text,
    p_candidates integer)
RETURNS TABLE (
    id text,
    partition_key text,
    scope text,
    content text,
    tags text[],
    importance smallint,
    category text,
    source text,
    author text,
    created_at timestamptz,
    updated_at timestamptz,
    distance float8,
    decay_score float8,
    age_days float8,
    keyword_score float8)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_dim integer := vector_dims(p_query);
BEGIN
    IF (SELECT string_to_array(e.extversion, '.')::int[] >= '{0,8,0}'
          FROM pg_extension e WHERE e.extname = 'vector') THEN
        PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
    END IF;
    PERFORM set_config('hnsw.ef_search', greatest(40, least(1000, p_candidates))::text, true);
    RETURN QUERY EXECUTE format(
        $q$
        SELECT c.id, c.partition_key, c.scope, c.content, c.tags, c.importance, c.category,
               c.source, c.author, c.created_at, c.updated_at, c.distance, c.score, c.age,
               0::float8
          FROM (
                SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance,
                       m.category, m.source, m.author, m.created_at, m.updated_at,
                       d.distance, d.age,
                       CASE WHEN $5 THEN amrita_memory.decay_score_v1(
                                d.distance, d.age, m.importance, $6, $7, $8)
                            ELSE amrita_memory.similarity_v1(d.distance) END AS score
                  FROM amrita_memory.memory m
                  CROSS JOIN LATERAL (
                        SELECT halfvec_l2_squared_distance(m.embedding, (SELECT $1::halfvec)) AS distance,
                               amrita_memory.age_days_v1(m.created_at, $4) AS age) d
                 WHERE m.partition_key = %L AND vector_dims(m.embedding) = %s
                   AND amrita_memory.memory_matches_v2(m.importance, m.scope, m.tags, m.category,
                                                       $9, $10, $11, $12, $13)
                 ORDER BY (m.embedding::halfvec(%s)) <-> ($1::halfvec(%s))
                 LIMIT $3
               ) c
         ORDER BY c.score DESC, c.distance, c.created_at, c.id
         LIMIT $2
        $q$, p_partition, v_dim, v_dim, v_dim)
    USING p_query, p_top_k, greatest(p_candidates, p_top_k), p_now, p_decay, p_base_days,
          p_boost, p_floor, p_importance_min, p_importance_max, p_scope, p_tags, p_category;
END
$$;
COMMENT ON FUNCTION amrita_memory.search_vector_ann_v5(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer) IS
'Vector mode on a partition with its own HNSW index: the p_candidates nearest filtered rows by that index, re-ranked by decay score.';

-- Vector mode, exact path: every row of the partition that passes the filters, scored
-- = 1/(1+distance) × max(0.5^(age/half_life(importance)), floor) (decay on), ordered
-- (score desc, distance, created_at, id). The OFFSET 0 subquery materialises distance,
-- age and half-life so the decay factor is computed inline on plain columns. A
-- single-statement SQL function: inlined into the caller's query.
--   psql> SELECT id, decay_score FROM amrita_memory.search_vector_exact_v5(
--           'QQPlatform_Private_10001', (SELECT embedding::vector FROM amrita_memory.memory LIMIT 1),
--           5, now(), true, 30, 1, 0.05, NULL, NULL, NULL, NULL, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.search_vector_exact_v5(
    p_partition text,
    p_query vector,
    p_top_k integer,
    p_now timestamptz,
    p_decay boolean,
    p_base_days float8,
    p_boost float8,
    p_floor float8,
    p_importance_min integer,
    p_importance_max integer,
    p_scope text,
    p_tags text[],
    p_category text)
RETURNS TABLE (
    id text,
    partition_key text,
    scope text,
    content text,
    tags text[],
    importance smallint,
    category text,
    source text,
    author text,
    created_at timestamptz,
    updated_at timestamptz,
    distance float8,
    decay_score float8,
    age_days float8,
    keyword_score float8)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, c.partition_key, c.scope, c.content, c.tags, c.importance, c.category,
           c.source, c.author, c.created_at, c.updated_at, c.distance, x.score, c.age,
           0::float8
      FROM (SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance,
                   m.category, m.source, m.author, m.created_at, m.updated_at,
                   halfvec_l2_squared_distance(m.embedding, (SELECT p_query::halfvec)) AS distance,
                   amrita_memory.age_days_v1(m.created_at, p_now) AS age,
                   amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
              FROM amrita_memory.memory m
             WHERE m.partition_key = p_partition
               AND amrita_memory.memory_matches_v2(
                       m.importance, m.scope, m.tags, m.category,
                       p_importance_min, p_importance_max, p_scope, p_tags, p_category)
            OFFSET 0) c
      CROSS JOIN LATERAL (
            SELECT CASE WHEN p_decay
                        THEN amrita_memory.similarity_v1(c.distance)
                             * amrita_memory.decay_factor_v1(c.age, c.half_life, p_floor)
                        ELSE amrita_memory.similarity_v1(c.distance) END AS score) x
     ORDER BY x.score DESC, c.distance, c.created_at, c.id
     LIMIT p_top_k
$$;
COMMENT ON FUNCTION amrita_memory.search_vector_exact_v5(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text) IS
'Vector mode over every row of the partition: 1/(1+squared L2) x max(0.5^(age/half_life), floor), top_k.';

