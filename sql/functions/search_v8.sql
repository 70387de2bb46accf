-- L2 search, release 9 (migration 0048_keyword_intersect, issue 24): keyword and hybrid
-- reads find a row's matching lexemes by intersection instead of unnesting its tsvector.
-- Released files are never edited: a change is a new file and a new migration.
--
-- Why. Real Chinese memories carry many search tokens: a 33-character text ~63 lexemes
-- (characters and bigrams, amrita_memory_pg/domain/tokens.py), and a 6-character query 11,
-- a third of them single characters that a third of a partition shares. v7 listed the
-- lexemes of every matching row (tsvector_to_array), unnested them all through a function
-- scan (which materialises its rows) and kept those equal to a query token: ~63 rows per
-- matching row to find the one or two that match. EXPLAIN (ANALYZE) of score_keyword_v7 on
-- 100k such rows (bench_l2.py --cjk-chars 33 loaded, a warm session, a partition of 100
-- rows and 36 matching): the unnest was 0.38 of the 0.9 ms; the seq-scan lab over the
-- 36,000 matching rows of the table: unnest + filter ~8.7 us a row, two ts_delete ~3.9.
--
-- What. score_keyword_v8, score_hybrid_rrf_v8 and score_hybrid_weighted_v8 are the v7
-- bodies with one expression changed: a matching row's lexemes are
--     tsvector_to_array(ts_delete(t, tsvector_to_array(ts_delete(t, p_tokens))))
-- i.e. t minus (t minus the query's tokens) = the lexemes of t that are query tokens, in
-- the tsvector's lexeme order, as tsvector_to_array(t) filtered by = ANY (p_tokens) gave
-- them. The rest (the filter, the window count of document frequency, the sums in lexeme
-- order) is v7's, so scores are v7's bit for bit (tests/integration/test_search_v8.py).
-- search_memories_v8 is search_memories_v7 on them (the vector path and a partition with
-- its own HNSW index are unchanged); recall_memories_v4 is recall_memories_v3 on
-- search_memories_v8. Measured (/tmp lab, 300 queries interleaved, 100k rows of 33 CJK
-- characters, prepared statements, p50): keyword 0.68-0.77x of v7, hybrid rrf
-- 0.71-0.78x, weighted 0.72-0.77x; 0 differences in 900 result lists.
-- v7 and recall_memories_v3 stay installed (the previous release calls them).


-- Keyword mode, exact path (score_keyword_v7, each row's matching lexemes by intersection): BM25 (k1 = 1.2, b = 0.75; row
-- count and average length over every row scored) of the rows sharing a token with the
-- query, times the decay factor; rows without a match are not returned; distance NULL.
--   psql> SELECT id, decay_score FROM amrita_memory.score_keyword_v8('QQPlatform_Private_10001',
--           ARRAY['猫'], amrita_memory.tokens_tsquery_v1(ARRAY['猫']), 5, now(), true, 30, 1,
--           0.05, NULL, NULL, NULL, NULL, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.score_keyword_v8(
    p_partition text,
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
    WITH c AS MATERIALIZED (
        SELECT m.ctid AS tid, m.id, m.created_at, m.importance,
               CASE WHEN m.search_tokens @@ p_tsq
                    THEN tsvector_to_array(ts_delete(m.search_tokens, tsvector_to_array(
                             ts_delete(m.search_tokens, p_tokens)))) END AS matched,
               length(m.search_tokens) AS len
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
        SELECT c.tid, c.id, c.created_at, c.importance, c.len,
               count(*) OVER (PARTITION BY u.lexeme) AS df
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) AS u(lexeme)
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    kw AS (
        SELECT h.tid, h.id, h.created_at,
               amrita_memory.age_days_v1(h.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, h.importance, p_boost) AS half_life,
               sum(ln(1 + (s.n - h.df + 0.5) / (h.df + 0.5))
                   * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h CROSS JOIN stats s
         GROUP BY h.tid, h.id, h.created_at, h.importance
    ),
    top AS (
        SELECT k.tid, k.id, k.created_at, k.age, k.bm25, x.score
          FROM kw k
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN k.bm25 * amrita_memory.decay_factor_v1(k.age, k.half_life, p_floor)
                            ELSE k.bm25 END AS score) x
         ORDER BY x.score DESC, k.created_at, k.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, NULL::float8, t.score, t.age,
           t.bm25
      FROM top t
      JOIN amrita_memory.memory m ON m.ctid = t.tid
     ORDER BY t.score DESC, t.created_at, t.id
$$;
COMMENT ON FUNCTION amrita_memory.score_keyword_v8(text, text[], tsquery, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text) IS
'Keyword mode of search_memories_v8 at the exact path (score_keyword_v7''s numbers, bit for bit): BM25 of the rows sharing a token with the query times the decay factor; a row''s matching lexemes by two ts_delete (no unnest of its whole tsvector), document frequency by a window count, age only for the matching rows, the top k fetched by ctid.';


-- Hybrid mode, rrf fusion, exact path (score_hybrid_rrf_v7, matching lexemes by intersection):
-- 1/(p_rrf_k + vector rank) + 1/(p_rrf_k + keyword rank) (the keyword term only for a row
-- sharing a token), times the decay factor. The vector rank orders every row scored by
-- (distance, created_at, id); the keyword rank the matching rows by (bm25 desc,
-- created_at, id).
--   psql> SELECT id, decay_score FROM amrita_memory.score_hybrid_rrf_v8('QQPlatform_Private_10001',
--           (SELECT embedding FROM amrita_memory.memory LIMIT 1), ARRAY['猫'],
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
               vector_l2_squared_distance(m.embedding, p_query) AS distance,
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
'Hybrid mode, rrf fusion, of search_memories_v8 at the exact path (score_hybrid_rrf_v7''s numbers, bit for bit): reciprocal ranks of the vector and keyword sides times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';


-- Hybrid mode, weighted fusion, exact path (score_hybrid_weighted_v7, matching lexemes by
-- intersection):
-- (1 - p_weight) × similarity min-max-normalised over the rows scored (1 when the spread
-- is under 1e-6) + p_weight × bm25 / max bm25, times the decay factor.
--   psql> SELECT id, decay_score FROM amrita_memory.score_hybrid_weighted_v8(
--           'QQPlatform_Private_10001', (SELECT embedding FROM amrita_memory.memory LIMIT 1),
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
               vector_l2_squared_distance(m.embedding, p_query) AS distance,
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
                           * CASE WHEN s.smax - s.smin > 1e-6
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
'Hybrid mode, weighted fusion, of search_memories_v8 at the exact path (score_hybrid_weighted_v7''s numbers, bit for bit): normalised similarity and bm25 / max bm25, weighted, times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';


-- The entry point of release 9: search_memories_v7 on the v8 bodies. search_memories_v6's
-- arguments, columns and checks, with enable_bitmapscan off for the statements it plans (read this file's header). Then:
--   a partition with its own HNSW index (in ann_index) → search_memories_v6, every mode
--     (its candidates by the HNSW and GIN indexes; bitmap scans on again for it);
--   otherwise, every row of the partition: vector → search_vector_exact_v5; keyword →
--     score_keyword_v8; hybrid → score_hybrid_rrf_v8 / score_hybrid_weighted_v8.
--   psql> SELECT id, round(decay_score::numeric, 4), content FROM amrita_memory.search_memories_v8(
--           p_partition => 'QQPlatform_Private_10001', p_query => NULL,
--           p_tokens => ARRAY['小宋', '考试'], p_mode => 'keyword', p_top_k => 5,
--           p_now => now(), p_decay => true, p_base_days => 30, p_boost => 1, p_floor => 0.05);
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_v8(
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
    p_importance_min integer DEFAULT NULL,
    p_importance_max integer DEFAULT NULL,
    p_scope text DEFAULT NULL,
    p_tags text[] DEFAULT NULL,
    p_category text DEFAULT NULL,
    p_candidates integer DEFAULT 200,
    p_fusion text DEFAULT 'rrf',
    p_rrf_k float8 DEFAULT 60,
    p_weight float8 DEFAULT 0.5)
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
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
AS $$
DECLARE
    v_dim integer := vector_dims(p_query);
    v_store_dim integer;
    v_ann boolean;
    v_tsq tsquery;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('vector', 'keyword', 'hybrid') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v8: unknown mode %L (vector, keyword or hybrid)', p_mode);
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v8: unknown fusion %L (rrf or weighted)', p_fusion);
    END IF;
    IF p_mode <> 'keyword' AND p_query IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v8: mode %s needs the query vector', p_mode);
    END IF;
    SELECT s.embed_dim,
           EXISTS (SELECT 1 FROM amrita_memory.ann_index a
                    WHERE a.partition_key = p_partition
                      AND (a.dim = v_dim OR (v_dim IS NULL AND a.dim = s.embed_dim)))
      INTO v_store_dim, v_ann
      FROM amrita_memory.store_meta s
     WHERE s.id = 1;
    IF v_dim IS NOT NULL AND v_store_dim IS DISTINCT FROM v_dim AND v_store_dim IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF03',
            MESSAGE = format('embedding dimension mismatch: the store holds %s-dimensional vectors, '
                             'this query has %s dimensions', v_store_dim, v_dim),
            HINT = 'run `amrita-memory reindex`, or configure the model the store was built with';
    END IF;

    IF v_ann THEN
        -- its own HNSW index: v6, whose GIN statement needs bitmap scans (this function's
        -- setting is inherited by the statements v6 plans; local: undone when it returns)
        PERFORM set_config('enable_bitmapscan', 'on', true);
        RETURN QUERY
        SELECT * FROM amrita_memory.search_memories_v6(
            p_partition, p_query, p_tokens, p_mode, p_top_k, p_now, p_decay, p_base_days,
            p_boost, p_floor, p_importance_min, p_importance_max, p_scope, p_tags,
            p_category, p_candidates, p_fusion, p_rrf_k, p_weight);
        RETURN;
    ELSIF p_mode = 'vector' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.search_vector_exact_v5(
            p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
            p_importance_min, p_importance_max, p_scope, p_tags, p_category);
        RETURN;
    END IF;

    v_tsq := amrita_memory.tokens_tsquery_v1(p_tokens);  -- once, not per row
    IF p_mode = 'keyword' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.score_keyword_v8(
            p_partition, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category);
    ELSIF p_fusion = 'rrf' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.score_hybrid_rrf_v8(
            p_partition, p_query, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, p_rrf_k);
    ELSE
        RETURN QUERY
        SELECT * FROM amrita_memory.score_hybrid_weighted_v8(
            p_partition, p_query, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, p_weight);
    END IF;
END
$$;
COMMENT ON FUNCTION amrita_memory.search_memories_v8(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer, text, float8, float8) IS
'Decay-scored retrieval in one partition (the runtime entry point of release 9): search_memories_v7 on the v8 bodies (matching lexemes by intersection); search_memories_v6''s arguments and results, generic plans without bitmap scans, plain v8 bodies for keyword and hybrid over a partition without its own HNSW index (v6 for one with). SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';


-- read_memory's one round trip: recall_memories_v3 over search_memories_v8 (recall_memories_v2's
-- behaviour), its statements
-- and the access log's (log_access_v1) planned once per connection (plan_cache_mode =
-- force_generic_plan: the log's INSERT and trim queries were planned again on every call).
-- Same arguments, same status rows: id NULL with paused = true for a paused partition,
-- checked first, nothing searched or logged; id NULL with log_error when the access log
-- failed, the hits standing. VOLATILE: it writes the log.
--   psql> SELECT id, decay_score, paused, log_error FROM amrita_memory.recall_memories_v4(
--           p_partition => 'QQPlatform_Private_10001', p_query => NULL,
--           p_tokens => ARRAY['猫'], p_mode => 'keyword', p_top_k => 5, p_now => now(),
--           p_decay => true, p_base_days => 30, p_boost => 1, p_floor => 0.05,
--           p_chat => 'QQPlatform_Private_10001', p_who => '10001', p_query_text => '猫',
--           p_surface => 'tool', p_keep => 20, p_log => true);
CREATE OR REPLACE FUNCTION amrita_memory.recall_memories_v4(
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
    p_importance_min integer DEFAULT NULL,
    p_importance_max integer DEFAULT NULL,
    p_scope text DEFAULT NULL,
    p_tags text[] DEFAULT NULL,
    p_category text DEFAULT NULL,
    p_candidates integer DEFAULT 200,
    p_fusion text DEFAULT 'rrf',
    p_rrf_k float8 DEFAULT 60,
    p_weight float8 DEFAULT 0.5,
    p_chat text DEFAULT NULL,
    p_who text DEFAULT NULL,
    p_query_text text DEFAULT NULL,
    p_surface text DEFAULT 'tool',
    p_keep integer DEFAULT 20,
    p_log boolean DEFAULT true)
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
    keyword_score float8,
    paused boolean,
    log_error text)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    r record;
    v_ids text[] := '{}';
    v_scores float8[] := '{}';
BEGIN
    IF EXISTS (SELECT 1 FROM amrita_memory.paused_partition p WHERE p.partition_key = p_partition) THEN
        paused := true;
        RETURN NEXT;
        RETURN;
    END IF;
    paused := false;
    FOR r IN SELECT * FROM amrita_memory.search_memories_v8(
                 p_partition, p_query, p_tokens, p_mode, p_top_k, p_now, p_decay, p_base_days,
                 p_boost, p_floor, p_importance_min, p_importance_max, p_scope, p_tags,
                 p_category, p_candidates, p_fusion, p_rrf_k, p_weight)
    LOOP
        id := r.id; partition_key := r.partition_key; scope := r.scope; content := r.content;
        tags := r.tags; importance := r.importance; category := r.category;
        source := r.source; author := r.author; created_at := r.created_at;
        updated_at := r.updated_at; distance := r.distance; decay_score := r.decay_score;
        age_days := r.age_days; keyword_score := r.keyword_score;
        v_ids := v_ids || r.id;
        v_scores := v_scores || r.decay_score;
        RETURN NEXT;
    END LOOP;
    IF p_log AND cardinality(v_ids) > 0 THEN
        BEGIN
            PERFORM amrita_memory.log_access_v1(
                array_fill(p_partition, ARRAY[cardinality(v_ids)]), v_ids, v_scores, p_now,
                p_chat, p_who, p_query_text, p_surface, p_keep);
        EXCEPTION WHEN OTHERS THEN
            id := NULL; partition_key := NULL; scope := NULL; content := NULL; tags := NULL;
            importance := NULL; category := NULL; source := NULL; author := NULL;
            created_at := NULL; updated_at := NULL; distance := NULL; decay_score := NULL;
            age_days := NULL; keyword_score := NULL;
            log_error := SQLERRM;
            RETURN NEXT;
        END;
    END IF;
END
$$;
COMMENT ON FUNCTION amrita_memory.recall_memories_v4(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer, text, float8, float8, text, text, text, text, integer, boolean) IS
'recall_memories_v3 over search_memories_v8: read_memory in one round trip, plans made once per connection (the access log''s too): paused partition first (one status row, paused = true, nothing searched), else the hits, then their access log (log_access_v1) in a sub-block that never fails the read (a status row with log_error).';
