-- L2 memory operations, release 6 (migration 0031_read_fast): the read path without
-- re-planning and with plain bodies per mode (issue 24, the read rows). Released files are
-- never edited: a change is a new file and a new migration.
--
-- Why (measured with EXPLAIN (ANALYZE, BUFFERS) on 100k memories / 1,000 partitions):
--   * search_memories_v5's vector mode planned its statement again on EVERY call: the
--     plan cache compares a generic plan's estimate with the custom plans', and the custom
--     plans fold the NULL filters away, so it never settled on the generic plan. Planning
--     the inlined exact statement took 0.31 ms, executing it 0.23 ms.
--   * score_memories_v2 (keyword and hybrid) is one body for every mode and fusion: the
--     generic plan keeps every CASE and window (both ranks and the min/max windows of the
--     weighted fusion, whatever the fusion), sorts every row twice, and carries every row's
--     content, tags and so on through the CTE, the hash join and both sorts.
--
-- What. search_memories_v6 takes v5's arguments and returns its columns, with the same
-- checks (22023, AMF03). It runs with plan_cache_mode = force_generic_plan (a function
-- SET clause: the plans of its statements are made once per connection) and dispatches:
--   * vector:          search_vector_exact_v5 / search_vector_ann_v5, unchanged (release
--                      3's scores, bit for bit);
--   * keyword:         score_keyword_v6;
--   * hybrid, rrf:     score_hybrid_rrf_v6;
--   * hybrid, weighted: score_hybrid_weighted_v6.
-- Each body is score_memories_v2's arithmetic for its mode, expression for expression:
-- the rows of the partition (or the candidates p_ids) scored on narrow columns only (id,
-- created_at, distance, age, half-life, token count, the tokens of a row that shares one
-- with the query); the keyword rank over the matching rows only (a row without a match
-- ranks after every row with one in v2, so its rank among them is the same); the weighted
-- fusion's min and max as one aggregate; the top k joined back to the table by primary key
-- for their content. On a partition with its own HNSW index the GIN candidate query is
-- dynamic SQL (planned for the partition at hand, as v5's custom plans were).
--
-- read_memory: recall_memories_v2 is recall_memories_v1 (pause check first, the search,
-- the access log in a sub-block that never fails the read) over search_memories_v6.


-- Keyword mode (score_memories_v2 with p_mode = 'keyword'): BM25 (k1 = 1.2, b = 0.75;
-- row count and average length over every row scored) of the rows sharing a token with
-- the query (p_tsq: the OR of p_tokens, tokens_tsquery_v1, tested in place), times the
-- decay factor; rows without a match are not returned. distance is NULL.
--   psql> SELECT id, decay_score FROM amrita_memory.score_keyword_v6('QQPlatform_Private_10001',
--           ARRAY['猫'], amrita_memory.tokens_tsquery_v1(ARRAY['猫']), 5, now(), true, 30, 1,
--           0.05, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.score_keyword_v6(
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
    p_category text,
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
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM (SELECT r.id, r.created_at, r.importance, r.scope, r.tags, r.category,
                       r.search_tokens
                  FROM amrita_memory.memory r
                 WHERE p_ids IS NULL AND r.partition_key = p_partition
                UNION ALL
                SELECT y.id, y.created_at, y.importance, y.scope, y.tags, y.category,
                       y.search_tokens
                  FROM (SELECT DISTINCT x.id FROM unnest(p_ids) AS x(id)) x
                  JOIN amrita_memory.memory y
                    ON y.partition_key = p_partition AND y.id = x.id) m
         WHERE amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    hit AS MATERIALIZED (
        SELECT c.id, c.created_at, c.age, c.half_life, c.len, u.lexeme
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
        SELECT h.id, h.created_at, h.age, h.half_life,
               sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.id, h.created_at, h.age, h.half_life
    ),
    top AS (
        SELECT k.id, k.created_at, k.age, k.bm25, x.score
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
      JOIN amrita_memory.memory m ON m.partition_key = p_partition AND m.id = t.id
     ORDER BY t.score DESC, t.created_at, t.id
$$;
COMMENT ON FUNCTION amrita_memory.score_keyword_v6(text, text[], tsquery, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, text[]) IS
'Keyword mode of search_memories_v6 (score_memories_v2''s numbers): BM25 of the rows sharing a token with the query times the decay factor, on narrow rows; the top k joined back for their content.';


-- Hybrid mode, rrf fusion (score_memories_v2 with p_mode = 'hybrid', p_fusion = 'rrf'):
-- 1/(p_rrf_k + vector rank) + 1/(p_rrf_k + keyword rank) (the keyword term only for a row
-- sharing a token), times the decay factor. The vector rank orders every row scored by
-- (distance, created_at, id); the keyword rank the matching rows by (bm25 desc,
-- created_at, id).
--   psql> SELECT id, decay_score FROM amrita_memory.score_hybrid_rrf_v6('QQPlatform_Private_10001',
--           (SELECT embedding FROM amrita_memory.memory LIMIT 1), ARRAY['猫'],
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
               vector_l2_squared_distance(m.embedding, p_query) AS distance,
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
'Hybrid mode, rrf fusion, of search_memories_v6 (score_memories_v2''s numbers): reciprocal ranks of the vector and keyword sides times the decay factor, on narrow rows; the top k joined back for their content.';


-- Hybrid mode, weighted fusion (score_memories_v2 with p_mode = 'hybrid', p_fusion =
-- 'weighted'): (1 - p_weight) × similarity min-max-normalised over the rows scored (1
-- when the spread is under 1e-6) + p_weight × bm25 / max bm25, times the decay factor.
--   psql> SELECT id, decay_score FROM amrita_memory.score_hybrid_weighted_v6(
--           'QQPlatform_Private_10001', (SELECT embedding FROM amrita_memory.memory LIMIT 1),
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
               vector_l2_squared_distance(m.embedding, p_query) AS distance,
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
      JOIN amrita_memory.memory m ON m.partition_key = p_partition AND m.id = t.id
     ORDER BY t.score DESC, t.distance, t.created_at, t.id
$$;
COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v6(text, vector, text[], tsquery, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, float8, text[]) IS
'Hybrid mode, weighted fusion, of search_memories_v6 (score_memories_v2''s numbers): normalised similarity and bm25 / max bm25, weighted, times the decay factor, on narrow rows; the top k joined back for their content.';


-- The entry point of release 6: search_memories_v5's arguments and columns, plans made
-- once per connection (plan_cache_mode = force_generic_plan), one plain body per mode and
-- fusion (read this file's header). The checks, then:
--   vector  → search_vector_ann_v5 (partition in ann_index) or search_vector_exact_v5;
--   keyword → score_keyword_v6; hybrid → score_hybrid_rrf_v6 / score_hybrid_weighted_v6,
--   over every row, or, for a partition in ann_index, over the p_candidates nearest rows
--   by its HNSW index (not in keyword mode) and the p_candidates rows sharing the most
--   tokens by the GIN index.
--   psql> SELECT id, round(decay_score::numeric, 4), content FROM amrita_memory.search_memories_v6(
--           p_partition => 'QQPlatform_Private_10001', p_query => NULL,
--           p_tokens => ARRAY['小宋', '考试'], p_mode => 'keyword', p_top_k => 5,
--           p_now => now(), p_decay => true, p_base_days => 30, p_boost => 1, p_floor => 0.05);
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_v6(
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
AS $$
DECLARE
    v_dim integer := vector_dims(p_query);
    v_store_dim integer;
    v_ann boolean;
    v_ids text[];
    v_near text[] := '{}';
    v_words text[] := '{}';
    v_tsq tsquery;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('vector', 'keyword', 'hybrid') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v6: unknown mode %L (vector, keyword or hybrid)', p_mode);
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v6: unknown fusion %L (rrf or weighted)', p_fusion);
    END IF;
    IF p_mode <> 'keyword' AND p_query IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v6: mode %s needs the query vector', p_mode);
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

    IF p_mode = 'vector' THEN
        IF v_ann THEN
            RETURN QUERY
            SELECT * FROM amrita_memory.search_vector_ann_v5(
                p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
                p_importance_min, p_importance_max, p_scope, p_tags, p_category, p_candidates);
        ELSE
            RETURN QUERY
            SELECT * FROM amrita_memory.search_vector_exact_v5(
                p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
                p_importance_min, p_importance_max, p_scope, p_tags, p_category);
        END IF;
        RETURN;
    END IF;

    v_tsq := amrita_memory.tokens_tsquery_v1(p_tokens);
    IF v_ann THEN
        IF p_mode <> 'keyword' THEN
            SELECT coalesce(array_agg(a.id), '{}') INTO v_near
              FROM amrita_memory.search_vector_ann_v5(
                       p_partition, p_query, greatest(p_candidates, p_top_k), p_now, false,
                       p_base_days, p_boost, p_floor, p_importance_min, p_importance_max,
                       p_scope, p_tags, p_category, greatest(p_candidates, p_top_k)) a;
        END IF;
        IF v_tsq IS NOT NULL THEN
            -- dynamic: planned for this (large) partition, not once for every one
            EXECUTE $q$
                SELECT coalesce(array_agg(k.id), '{}')
                  FROM (SELECT m.id
                          FROM amrita_memory.memory m
                         WHERE m.partition_key = $1
                           AND m.search_tokens @@ $2
                         ORDER BY ts_rank(m.search_tokens, $2) DESC, m.created_at DESC, m.id
                         LIMIT $3) k
            $q$ INTO v_words USING p_partition, v_tsq, greatest(p_candidates, p_top_k);
        END IF;
        v_ids := v_near || v_words;
    END IF;
    IF p_mode = 'keyword' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.score_keyword_v6(
            p_partition, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, v_ids);
    ELSIF p_fusion = 'rrf' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.score_hybrid_rrf_v6(
            p_partition, p_query, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, p_rrf_k, v_ids);
    ELSE
        RETURN QUERY
        SELECT * FROM amrita_memory.score_hybrid_weighted_v6(
            p_partition, p_query, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, p_weight, v_ids);
    END IF;
END
$$;
COMMENT ON FUNCTION amrita_memory.search_memories_v6(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer, text, float8, float8) IS
'Decay-scored retrieval in one partition (the runtime entry point of release 6): search_memories_v5''s arguments and results, generic plans, one plain body per mode and fusion. SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';


-- read_memory's one round trip: recall_memories_v1 over search_memories_v6 (same
-- arguments, same status rows: id NULL with paused = true for a paused partition, checked
-- first, nothing searched or logged; id NULL with log_error when the access log failed,
-- the hits standing). VOLATILE: it writes the log.
--   psql> SELECT id, decay_score, paused, log_error FROM amrita_memory.recall_memories_v2(
--           p_partition => 'QQPlatform_Private_10001', p_query => NULL,
--           p_tokens => ARRAY['猫'], p_mode => 'keyword', p_top_k => 5, p_now => now(),
--           p_decay => true, p_base_days => 30, p_boost => 1, p_floor => 0.05,
--           p_chat => 'QQPlatform_Private_10001', p_who => '10001', p_query_text => '猫',
--           p_surface => 'tool', p_keep => 20, p_log => true);
CREATE OR REPLACE FUNCTION amrita_memory.recall_memories_v2(
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
    FOR r IN SELECT * FROM amrita_memory.search_memories_v6(
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
COMMENT ON FUNCTION amrita_memory.recall_memories_v2(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer, text, float8, float8, text, text, text, text, integer, boolean) IS
'read_memory in one round trip over search_memories_v6: paused partition first (one status row, paused = true, nothing searched), else the hits, then their access log (log_access_v1) in a sub-block that never fails the read (a status row with log_error).';
