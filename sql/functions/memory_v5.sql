-- L2 memory operations, release 5 (migration 0023_l2_fast): the read path made fast again
-- (issue 24). Released files are never edited: a change is a new file and a new migration.
--
-- Why. search_memories_v4 sent every mode through score_memories_v1, which materialises
-- every row of the partition (search tokens included), ranks them twice with window
-- functions and joins a keyword side even in vector mode; on a partition with its own
-- HNSW index it fetched the candidates by id a second time. Measured against release 3
-- (bench/ab_l2.py): vector reads 1.7x slower at the exact path, 5x on an HNSW partition.
--
-- What. search_memories_v5 takes search_memories_v4's arguments and returns its columns;
-- it checks the same things (22023 for a bad mode or fusion or a missing vector, AMF03 for
-- a query of another dimension), then dispatches by mode to a plain statement:
--   * vector, exact path:   search_vector_exact_v5 — one ORDER BY score LIMIT k over the
--                           partition's rows (release 3's search_memories_exact_v3 with
--                           the category filter); scores bit-identical to release 3.
--   * vector, HNSW path:    search_vector_ann_v5 — the p_candidates nearest rows of the
--                           partition's own index, re-ranked (release 3's
--                           search_memories_ann_v3 with the category filter inside the
--                           index scan, so a filtered search still finds k rows).
--   * keyword and hybrid:   score_memories_v2 — score_memories_v1's BM25 and fusion, bit
--                           for bit, but the tokens of a row are unnested only when the
--                           row shares a token with the query (a tsquery of the query's
--                           tokens, built once per search by the dispatcher), and no row
--                           carries its tokens further than that test.
-- Nothing here depends on the functions of releases 1–3 (they may be retired).
--
-- read_memory in one round trip: recall_memories_v1 is search_memories_v5 plus the trail
-- (trail_v1.sql): the pause check first (a paused partition returns one row with paused =
-- true and no search runs), then the search, then log_access_v1 of the hits, in a
-- sub-block whose failure is swallowed (a WARNING): the access log never fails a read.


-- Vector mode, exact path: every row of the partition that passes the filters, scored
-- = 1/(1+distance) × max(0.5^(age/half_life(importance)), floor) (decay on), ordered
-- (score desc, distance, created_at, id). The OFFSET 0 subquery materialises distance,
-- age and half-life so the decay factor is computed inline on plain columns (release 3's
-- plan). A single-statement SQL function: inlined into the caller's query.
--   psql> SELECT id, decay_score FROM amrita_memory.search_vector_exact_v5(
--           'QQPlatform_Private_10001', (SELECT embedding FROM amrita_memory.memory LIMIT 1),
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
                   vector_l2_squared_distance(m.embedding, p_query) AS distance,
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
'Vector mode, exact path of search_memories_v5: every row of the partition scored 1/(1+squared L2) x max(0.5^(age/half_life), floor), top_k (release 3''s scores, bit for bit).';


-- Vector mode, HNSW path (a partition listed in ann_index, with its own partial index):
-- the p_candidates nearest rows that pass the filters, by the index, re-ranked by decay
-- score (decay_score_v1: the exact path's expression). Dynamic SQL because the partial
-- index's predicate (partition and dimension literals) must appear verbatim for the
-- planner to use it; hnsw.iterative_scan (pgvector ≥ 0.8) keeps the index yielding rows
-- while filters reject some. Both settings last until the end of the transaction.
--   psql> SELECT id FROM amrita_memory.search_vector_ann_v5('QQPlatform_Group_big',
--           (SELECT embedding FROM amrita_memory.memory LIMIT 1), 5, now(), true, 30, 1,
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
                        SELECT vector_l2_squared_distance(m.embedding, $1) AS distance,
                               amrita_memory.age_days_v1(m.created_at, $4) AS age) d
                 WHERE m.partition_key = %L AND vector_dims(m.embedding) = %s
                   AND amrita_memory.memory_matches_v2(m.importance, m.scope, m.tags, m.category,
                                                       $9, $10, $11, $12, $13)
                 ORDER BY (m.embedding::vector(%s)) <-> ($1::vector(%s))
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
'Vector mode, HNSW path of search_memories_v5: the p_candidates nearest filtered rows by the partition''s own index, re-ranked by decay score (release 3''s scores).';


-- Keyword and hybrid scoring of one partition's rows (all, or the candidates p_ids):
-- score_memories_v1's numbers, bit for bit (read memory_v4.sql's header: BM25 with
-- k1 = 1.2, b = 0.75 over the rows scored, rrf or weighted fusion, times the decay), with
-- the keyword side over the rows sharing a token only: p_tsq (the OR of the query's
-- tokens, tokens_tsquery_v1, computed once by the caller) tests a row's tsvector in place,
-- and only a matching row's tokens are unnested. The statistics (row count, average
-- length) stay those of every row scored, as in v1.
CREATE OR REPLACE FUNCTION amrita_memory.score_memories_v2(
    p_partition text,
    p_query vector,
    p_tokens text[],
    p_tsq tsquery,
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
               m.source, m.author, m.created_at, m.updated_at,
               CASE WHEN m.search_tokens @@ p_tsq THEN m.search_tokens END AS matched,
               length(m.search_tokens) AS len,
               CASE WHEN p_mode = 'keyword' THEN NULL
                    ELSE vector_l2_squared_distance(m.embedding, p_query) END AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM (SELECT r.*
                  FROM amrita_memory.memory r
                 WHERE p_ids IS NULL AND r.partition_key = p_partition
                UNION ALL
                SELECT r.*
                  FROM (SELECT DISTINCT x.id FROM unnest(p_ids) AS x(id)) x
                  CROSS JOIN LATERAL (
                        SELECT * FROM amrita_memory.memory y
                         WHERE y.partition_key = p_partition AND y.id = x.id) r) m
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
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen
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
        SELECT c.id, c.partition_key, c.scope, c.content, c.tags, c.importance, c.category,
               c.source, c.author, c.created_at, c.updated_at, c.distance, c.age,
               c.half_life, kw.bm25,
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
                   WHEN 'keyword' THEN r.bm25
                   ELSE CASE p_fusion
                       WHEN 'rrf' THEN 1.0 / (p_rrf_k + r.vrank)
                                       + coalesce(1.0 / (p_rrf_k + r.krank), 0)
                       ELSE (1 - p_weight)
                                * CASE WHEN max(r.similarity) OVER () - min(r.similarity) OVER () > 1e-6
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
COMMENT ON FUNCTION amrita_memory.score_memories_v2(text, vector, text[], tsquery, text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, text, float8, float8, text[]) IS
'Keyword / hybrid scoring of search_memories_v5 (score_memories_v1''s numbers): BM25 over the rows sharing a token with the query (p_tsq tested in place, only those rows'' tokens unnested), fusion, times the decay factor.';


-- The entry point of release 5: search_memories_v4's arguments and columns, one plain
-- statement per mode (read this file's header). The checks, then:
--   vector  → search_vector_ann_v5 (partition in ann_index) or search_vector_exact_v5;
--   keyword / hybrid → score_memories_v2 over every row, or, for a partition in
--   ann_index, over the p_candidates nearest rows by its HNSW index (not in keyword mode)
--   and the p_candidates rows sharing the most tokens by the GIN index (as v4).
--   psql> SELECT id, round(decay_score::numeric, 4), content FROM amrita_memory.search_memories_v5(
--           p_partition => 'QQPlatform_Private_10001', p_query => NULL,
--           p_tokens => ARRAY['小宋', '考试'], p_mode => 'keyword', p_top_k => 5,
--           p_now => now(), p_decay => true, p_base_days => 30, p_boost => 1, p_floor => 0.05);
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_v5(
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
            MESSAGE = format('search_memories_v5: unknown mode %L (vector, keyword or hybrid)', p_mode);
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v5: unknown fusion %L (rrf or weighted)', p_fusion);
    END IF;
    IF p_mode <> 'keyword' AND p_query IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v5: mode %s needs the query vector', p_mode);
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
            SELECT coalesce(array_agg(k.id), '{}') INTO v_words
              FROM (SELECT m.id
                      FROM amrita_memory.memory m
                     WHERE m.partition_key = p_partition
                       AND m.search_tokens @@ v_tsq
                     ORDER BY ts_rank(m.search_tokens, v_tsq) DESC, m.created_at DESC, m.id
                     LIMIT greatest(p_candidates, p_top_k)) k;
        END IF;
        v_ids := v_near || v_words;
    END IF;
    RETURN QUERY
    SELECT * FROM amrita_memory.score_memories_v2(
        p_partition, p_query, coalesce(p_tokens, '{}'), v_tsq, p_mode, p_top_k, p_now,
        p_decay, p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
        p_tags, p_category, p_fusion, p_rrf_k, p_weight, v_ids);
END
$$;
COMMENT ON FUNCTION amrita_memory.search_memories_v5(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer, text, float8, float8) IS
'Decay-scored retrieval in one partition (the runtime entry point of release 5): search_memories_v4''s arguments and results, one plain statement per mode (vector exact / HNSW, keyword and hybrid through score_memories_v2). SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';


-- read_memory's one round trip (issue 24): the pause check, search_memories_v5 (its
-- arguments, same defaults), then the access log of the hits (log_access_v1: p_chat,
-- p_who, p_query_text redacted by the caller, p_surface, p_keep per memory, when p_log;
-- logged at p_now, the search's time). A paused partition is checked FIRST: nothing is
-- searched or logged and one status row comes back. The log runs in a sub-block whose
-- failure is caught: the hits stand and one status row carries the error. Status rows
-- have id NULL: paused = true (paused partition), or log_error (the log failed). Hit rows
-- have paused = false and log_error NULL. VOLATILE: it writes the log.
--   psql> SELECT id, decay_score, paused, log_error FROM amrita_memory.recall_memories_v1(
--           p_partition => 'QQPlatform_Private_10001', p_query => NULL,
--           p_tokens => ARRAY['猫'], p_mode => 'keyword', p_top_k => 5, p_now => now(),
--           p_decay => true, p_base_days => 30, p_boost => 1, p_floor => 0.05,
--           p_chat => 'QQPlatform_Private_10001', p_who => '10001', p_query_text => '猫',
--           p_surface => 'tool', p_keep => 20, p_log => true);
CREATE OR REPLACE FUNCTION amrita_memory.recall_memories_v1(
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
    FOR r IN SELECT * FROM amrita_memory.search_memories_v5(
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
COMMENT ON FUNCTION amrita_memory.recall_memories_v1(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer, text, float8, float8, text, text, text, text, integer, boolean) IS
'read_memory in one round trip: paused partition first (one status row, paused = true, nothing searched), else search_memories_v5''s hits, then their access log (log_access_v1) in a sub-block that never fails the read (a status row with log_error).';
