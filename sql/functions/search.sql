-- L2 search: decay-scored retrieval in one partition. read_memory's round trip is
-- recall_memories_v4 (the pause check first, search_memories_v8, the access log written
-- in the same statement); search_memories_v8 is the entry point of every other search.
--
-- Vectors. memory.embedding is halfvec (half precision: half the bytes of vector, the same
-- retrieval results, docs/performance.md); distances are halfvec_l2_squared_distance, and a
-- large partition's HNSW index is over (embedding::halfvec(n)) halfvec_l2_ops. The query
-- comes as vector and is cast once per statement, (SELECT p_query::halfvec) (an InitPlan):
-- left to pgvector's implicit cast, a generic plan casts it again for every row, which
-- doubled the cost of a distance.
--
-- Modes. vector: similarity 1/(1+distance) (squared L2, decay.sql). keyword: BM25
-- (k1 = 1.2, b = 0.75) computed here over the rows scored: idf(t) = ln(1 + (N - df + 0.5)
-- / (df + 0.5)), each matched token contributing idf × (k1 + 1) / (1 + k1 × (1 - b + b ×
-- len / avglen)) (tf = 1: the tsvector holds distinct tokens; len = its number of tokens).
-- ts_rank / ts_rank_cd have no idf, which a character-level tokenization cannot do without
-- (的, 天, "go" are in every other row). hybrid: both, fused by
--   p_fusion = 'rrf':      1/(p_rrf_k + vector rank) + 1/(p_rrf_k + keyword rank)
--                          (a row without a keyword match gets the vector term only)
--   p_fusion = 'weighted': (1 - p_weight) × similarity min-max-normalised over the rows
--                          (1 when their spread is under 1e-3: the noise of half-precision
--                          vectors, whose lengths are rounded too, is no signal)
--                          + p_weight × bm25 / max bm25
-- then the time decay: decay_score = score × max(0.5^(age/half_life(importance)), floor).
-- Keyword mode needs no query vector (p_query may be NULL).
--
-- Tokens. memory.search_tokens is a tsvector of tokens made in Python
-- (amrita_memory_pg/domain/tokens.py: CJK characters and character pairs, stemmed
-- lower-case Latin words, numbers) and stored with array_to_tsvector, i.e. the lexemes as
-- given: no parser, no dictionary, no dependence on the cluster's locale. A query is
-- tokenized by the same function and passed as text[]. NULL search_tokens = not yet
-- tokenized (a row restored from a JSONL backup): maintenance/tokens.py fills them in;
-- meanwhile such a row is found by the vector side only.
--
-- Plans. search_memories_v8 checks its arguments (22023 for a bad mode or fusion or a
-- missing vector, AMF03 for a query of another dimension) and dispatches to one plain
-- statement per mode and fusion, each planned once per connection (plan_cache_mode =
-- force_generic_plan; a per-call plan of the inlined statement cost more than running
-- it), with bitmap scans off for a partition's rows:
--   * a partition with its own HNSW index (listed in ann_index, maintenance/ann.py):
--     search_memories_v6, every mode: the p_candidates nearest rows by its HNSW index
--     (search_vector_ann_v5) and the p_candidates rows sharing the most tokens by its GIN
--     index, scored by score_*_v6;
--   * otherwise every row of the partition: vector → search_vector_exact_v5; keyword →
--     score_keyword_v8; hybrid → score_hybrid_rrf_v8 / score_hybrid_weighted_v8. These
--     score narrow rows (id, created_at, distance, age, half-life, token count) and join
--     the top k back for their content; a row's matching lexemes are found by
--     intersection, tsvector_to_array(ts_delete(t, tsvector_to_array(ts_delete(t,
--     p_tokens)))) = the lexemes of t that are query tokens, without unnesting its whole
--     tsvector (a 33-character Chinese memory has ~63 lexemes).
-- The optional filters (importance range, scope, tags, category) are written once,
-- memory_matches_v2, and inlined by the planner. score_memories_v1 is every mode in one
-- body: the Chroma backend's keyword candidates (sql/queries/chroma.sql) and
-- amrita_memory_pg/domain/fusion.py's twin.


-- The optional filters of every search, on top of the partition (which callers keep as a
-- plain `m.partition_key = $1` so that the btree, and Citus's router, see it):
--   importance between p_min and p_max (1–10, either bound NULL = open), scope =
--   p_want_scope, at least one of p_any_tags, category = p_want_category (NULL = any).
-- A single-expression, IMMUTABLE, non-STRICT SQL function: the planner INLINES it, so a
-- query that calls it gets exactly the predicate written out (EXPLAIN shows no call).
-- Do not make it STRICT (an inlined strict function must be strict in every argument,
-- which `IS NULL OR …` is not), plpgsql, SECURITY DEFINER or SET-configured: each of
-- those stops inlining and turns the filter into a function call per row. Column
-- arguments, not a whole-row one: a whole-row argument would build the row (vector
-- included) for every candidate.
--   psql> SELECT count(*) FROM amrita_memory.memory m WHERE m.partition_key = 'global'
--           AND amrita_memory.memory_matches_v2(m.importance, m.scope, m.tags, m.category,
--                                               NULL, NULL, NULL, NULL, 'preference');
CREATE OR REPLACE FUNCTION amrita_memory.memory_matches_v2(
    p_importance smallint,
    p_scope text,
    p_tags text[],
    p_category text,
    p_min integer,
    p_max integer,
    p_want_scope text,
    p_any_tags text[],
    p_want_category text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT (p_min IS NULL OR p_importance >= p_min)
       AND (p_max IS NULL OR p_importance <= p_max)
       AND (p_want_scope IS NULL OR p_scope = p_want_scope)
       AND (p_any_tags IS NULL OR p_tags && p_any_tags)
       AND (p_want_category IS NULL OR p_category = p_want_category)
$$;
COMMENT ON FUNCTION amrita_memory.memory_matches_v2(smallint, text, text[], text, integer, integer, text, text[], text) IS
'Search filter on top of the partition: importance range, scope, any tag and category (NULL = any). Inlined by the planner.';


-- The OR of the given tokens as a tsquery, each a quoted lexeme taken as it is (the
-- tsquery input syntax, not to_tsquery: no parser, no dictionary). NULL for no tokens.
--   psql> SELECT amrita_memory.tokens_tsquery_v1(ARRAY['小宋', 'it''s']);  -- '小宋' | 'it''s'
CREATE OR REPLACE FUNCTION amrita_memory.tokens_tsquery_v1(p_tokens text[])
RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT string_agg('''' || replace(replace(t, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery
      FROM unnest(p_tokens) t
     WHERE t <> ''
$$;
COMMENT ON FUNCTION amrita_memory.tokens_tsquery_v1(text[]) IS
'The OR of the tokens as a tsquery (quoted lexemes, no parsing); NULL for none. The keyword side of every search.';


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


-- Keyword mode over a partition's HNSW/GIN candidates (search_memories_v6): BM25 (k1 =
-- 1.2, b = 0.75; row count and average length over every row scored) of the rows sharing
-- a token with the query (p_tsq: the OR of p_tokens, tokens_tsquery_v1, tested in place), times the
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
'Keyword mode of search_memories_v6 (a partition''s HNSW and GIN candidates): BM25 of the rows sharing a token with the query times the decay factor, on narrow rows; the top k joined back for their content.';


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


-- Search a partition that has its own HNSW index (search_memories_v8 sends it here):
-- plans made once per connection, one plain body per mode and fusion. The checks, then:
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
'Decay-scored retrieval in a partition with its own HNSW index (search_memories_v8 sends it here): generic plans, one plain body per mode and fusion over the HNSW and GIN candidates. SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';


-- Keyword mode, every row of the partition (each row's matching lexemes by intersection):
-- BM25 (k1 = 1.2, b = 0.75; row count and average length over every row scored) of the rows sharing a token with the
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
'Keyword mode of search_memories_v8 over every row of the partition: BM25 of the rows sharing a token with the query times the decay factor; a row''s matching lexemes by two ts_delete (no unnest of its whole tsvector), document frequency by a window count, age only for the matching rows, the top k fetched by ctid.';


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


-- The entry point of every search: the checks, with enable_bitmapscan off for the
-- statements it plans (read this file's header). Then:
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
'Decay-scored retrieval in one partition, the entry point of every search: generic plans without bitmap scans; plain bodies per mode and fusion over a partition without its own HNSW index, search_memories_v6 for one with. SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';


-- read_memory's one round trip: search_memories_v8 and the access log (log_access_v1),
-- their statements planned once per connection (plan_cache_mode = force_generic_plan: the
-- log's INSERT and trim queries would otherwise be planned again on every call). Status
-- rows: id NULL with paused = true for a paused partition, checked first, nothing searched
-- or logged; id NULL with log_error when the access log failed (in a sub-block whose
-- failure is swallowed: the access log never fails a read), the hits standing. VOLATILE:
-- it writes the log.
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
'read_memory in one round trip over search_memories_v8, plans made once per connection (the access log''s too): paused partition first (one status row, paused = true, nothing searched), else the hits, then their access log (log_access_v1) in a sub-block that never fails the read (a status row with log_error).';
