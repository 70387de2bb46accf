-- L2 memory operations, release 4 (migration 0015_hybrid): hybrid vector + keyword search
-- (issue 16). Released files are never edited: a change is a new file and a new migration.
--
-- The keyword side. memory.search_tokens is a tsvector of tokens made in Python
-- (amrita_memory_pg/domain/tokens.py: CJK characters and character pairs, stemmed
-- lower-case Latin words, numbers) and stored with array_to_tsvector, i.e. the lexemes
-- as given: no parser, no dictionary, no dependence on the cluster's locale. A query is
-- tokenized by the same function and passed as text[]. NULL search_tokens = not yet
-- tokenized (rows written before 0015, or restored from a JSONL backup): the maintenance
-- step amrita_memory_pg/maintenance/tokens.py fills them in; meanwhile they are found by
-- the vector side only.
--
-- The keyword score is BM25 (k1 = 1.2, b = 0.75) computed here, over the rows being
-- scored: idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)), each matched token contributing
-- idf × (k1 + 1) / (1 + k1 × (1 - b + b × len / avglen)) (tf = 1: the tsvector holds
-- distinct tokens; len = its number of tokens). ts_rank / ts_rank_cd have no idf, which a
-- character-level tokenization cannot do without (的, 天, "go" are in every other row).
--
-- Fusion (p_mode = 'hybrid'), then the time decay exactly as in release 3:
--   p_fusion = 'rrf':      1/(p_rrf_k + vector rank) + 1/(p_rrf_k + keyword rank)
--                          (a row without a keyword match gets the vector term only)
--   p_fusion = 'weighted': (1 - p_weight) × similarity min-max-normalised over the rows
--                          (1 when their spread is under 1e-6: float noise is no signal)
--                          + p_weight × bm25 / max bm25
--   decay_score = fused × max(0.5^(age/half_life(importance)), floor)
-- p_mode = 'vector' is release 3's score, bit for bit (similarity × decay factor; the
-- decay parity of reference §5.1). p_mode = 'keyword' ranks the rows that share a token
-- with the query by bm25 × decay factor and needs no query vector (p_query may be NULL).
--
-- SQLSTATEs as in release 3 (AMF01, AMF03, 22023), plus 22023 for an unknown p_mode or
-- p_fusion, or a vector/hybrid search without its query vector.


-- The optional filters of every search: memory_matches_v1 plus category (NULL = any).
-- Inlined by the planner like v1 (read its header before changing the function's kind).
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
'Search filter on top of the partition: memory_matches_v1 (importance range, scope, any tag) and category = p_want_category (NULL = any). Inlined by the planner.';


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
'The OR of the tokens as a tsquery (quoted lexemes, no parsing); NULL for none. The keyword side of search_memories_v4.';


-- Score one partition's rows (or the candidates p_ids of it) for a query: distance,
-- bm25, fused score, decay. The core of search_memories_v4's two paths: the exact path
-- passes p_ids NULL (every row of the partition that passes the filters), the HNSW path
-- the ids of its candidates. BM25's statistics (row count, document frequency, average
-- length) are those of the rows scored.
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
                    ELSE vector_l2_squared_distance(m.embedding, p_query) END AS distance,
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
COMMENT ON FUNCTION amrita_memory.score_memories_v1(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, text, float8, float8, text[]) IS
'Score the rows of one partition (all, or the candidate ids p_ids) for search_memories_v4: vector similarity, BM25 over the search tokens, fusion by mode (vector | keyword | hybrid; rrf or weighted), times the decay factor.';


-- Hybrid decay-scored retrieval, the entry point of release 4. Arguments as
-- search_memories_v3 with the query's tokens and the mode after the vector, the category
-- filter after the tags, then the fusion. Checks the mode and the query vector's
-- dimension (AMF03, as v3), then scores:
--   * a partition listed in ann_index (its own partial HNSW index): the p_candidates
--     nearest rows by the index (not in keyword mode) and the p_candidates rows sharing
--     the most tokens with the query (GIN index on search_tokens; not in vector mode);
--   * any other partition: every row (the exact path).
--   psql> SELECT id, round(decay_score::numeric, 4), content FROM amrita_memory.search_memories_v4(
--           'QQPlatform_Private_10001', NULL, ARRAY['小宋', '考试'], 'keyword',
--           5, now(), true, 30, 1, 0.05);
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_v4(
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
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('vector', 'keyword', 'hybrid') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v4: unknown mode %L (vector, keyword or hybrid)', p_mode);
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v4: unknown fusion %L (rrf or weighted)', p_fusion);
    END IF;
    IF p_mode <> 'keyword' AND p_query IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v4: mode %s needs the query vector', p_mode);
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
        IF p_mode <> 'keyword' THEN
            SELECT coalesce(array_agg(a.id), '{}') INTO v_near
              FROM amrita_memory.search_memories_ann_v3(
                       p_partition, p_query, greatest(p_candidates, p_top_k), p_now, false,
                       p_base_days, p_boost, p_floor, p_importance_min, p_importance_max,
                       p_scope, p_tags, greatest(p_candidates, p_top_k)) a;
        END IF;
        IF p_mode <> 'vector' AND coalesce(cardinality(p_tokens), 0) > 0 THEN
            SELECT coalesce(array_agg(k.id), '{}') INTO v_words
              FROM (SELECT m.id
                      FROM amrita_memory.memory m
                     WHERE m.partition_key = p_partition
                       AND m.search_tokens @@ amrita_memory.tokens_tsquery_v1(p_tokens)
                     ORDER BY ts_rank(m.search_tokens, amrita_memory.tokens_tsquery_v1(p_tokens)) DESC,
                              m.created_at DESC, m.id
                     LIMIT greatest(p_candidates, p_top_k)) k;
        END IF;
        v_ids := v_near || v_words;
    END IF;
    RETURN QUERY
    SELECT * FROM amrita_memory.score_memories_v1(
        p_partition, p_query, coalesce(p_tokens, '{}'), p_mode, p_top_k, p_now, p_decay,
        p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope, p_tags,
        p_category, p_fusion, p_rrf_k, p_weight, v_ids);
END
$$;
COMMENT ON FUNCTION amrita_memory.search_memories_v4(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer, text, float8, float8) IS
'Hybrid decay-scored retrieval in one partition (the runtime entry point of release 4): mode vector (= search_memories_v3), keyword (BM25 over search_tokens) or hybrid (rrf or weighted fusion), times the decay factor; HNSW + GIN candidates for partitions in ann_index. SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';


-- insert_memory_v2 that also stores the search tokens (p_tokens; NULL = to be filled in
-- by the token backfill). Same cap, lock and model checks: read insert_memory_v2's header.
CREATE OR REPLACE FUNCTION amrita_memory.insert_memory_v3(
    p_partition text,
    p_scope text,
    p_content text,
    p_tags text[],
    p_importance integer,
    p_category text,
    p_source text,
    p_author text,
    p_embedding vector,
    p_fingerprint text,
    p_now timestamptz,
    p_cap integer,
    p_tokens text[],
    p_protocol text DEFAULT NULL,
    p_model text DEFAULT NULL,
    p_base_url text DEFAULT NULL)
RETURNS TABLE (id text, rows_before integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_dim integer := vector_dims(p_embedding);
    v_count integer;
    v_id text;
BEGIN
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, v_dim, p_now, p_protocol, p_model, p_base_url);

    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    SELECT count(*)::integer INTO v_count
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition;
    IF v_count >= p_cap THEN
        RETURN QUERY SELECT NULL::text, v_count;
        RETURN;
    END IF;

    INSERT INTO amrita_memory.memory AS m
           (partition_key, scope, content, tags, importance, category, source, author,
            created_at, updated_at, tier_since, embedding, embed_fingerprint, search_tokens)
    VALUES (p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, p_category,
            p_source, p_author, p_now, p_now, p_now, p_embedding, p_fingerprint,
            array_to_tsvector(p_tokens))
    RETURNING m.id INTO v_id;

    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, v_dim, p_now, p_protocol, p_model, p_base_url);
    RETURN QUERY SELECT v_id, v_count;
END
$$;
COMMENT ON FUNCTION amrita_memory.insert_memory_v3(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text[], text, text, text) IS
'insert_memory_v2 (cap under an advisory lock, model check AMF01/AMF03; id NULL when full) that also stores the search tokens.';


-- write_memory_v1 (the chat tool's idempotent write) on insert_memory_v3: the duplicate
-- lookup is unchanged, a new row gets its search tokens p_tokens.
CREATE OR REPLACE FUNCTION amrita_memory.write_memory_v2(
    p_partition text,
    p_scope text,
    p_content text,
    p_tags text[],
    p_importance integer,
    p_category text,
    p_source text,
    p_author text,
    p_embedding vector,
    p_fingerprint text,
    p_now timestamptz,
    p_cap integer,
    p_dedup_seconds float8,
    p_tokens text[],
    p_protocol text DEFAULT NULL,
    p_model text DEFAULT NULL,
    p_base_url text DEFAULT NULL)
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
    rows_before integer,
    duplicate boolean)
LANGUAGE plpgsql
AS $$
DECLARE
    v_id text;
    v_before integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    IF p_dedup_seconds > 0 THEN
        SELECT m.id INTO v_id
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND m.created_at >= p_now - make_interval(secs => p_dedup_seconds)
           AND m.scope = p_scope
           AND m.content = p_content
           AND m.author IS NOT DISTINCT FROM p_author
           AND m.source = p_source
           AND m.embed_fingerprint = p_fingerprint
         ORDER BY m.created_at DESC, m.id DESC
         LIMIT 1;
        IF v_id IS NOT NULL THEN
            RETURN QUERY
            SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
                   m.source, m.author, m.created_at, m.updated_at,
                   (SELECT count(*)::integer FROM amrita_memory.memory c
                     WHERE c.partition_key = p_partition),
                   true
              FROM amrita_memory.memory m
             WHERE m.partition_key = p_partition AND m.id = v_id;
            RETURN;
        END IF;
    END IF;

    SELECT i.id, i.rows_before INTO v_id, v_before
      FROM amrita_memory.insert_memory_v3(
               p_partition, p_scope, p_content, p_tags, p_importance, p_category, p_source,
               p_author, p_embedding, p_fingerprint, p_now, p_cap, p_tokens, p_protocol,
               p_model, p_base_url) i;
    IF v_id IS NULL THEN
        RETURN QUERY SELECT NULL::text, p_partition, p_scope, p_content, p_tags,
                            p_importance::smallint, p_category, p_source, p_author,
                            p_now, p_now, v_before, false;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, v_before, false
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = v_id;
END
$$;
COMMENT ON FUNCTION amrita_memory.write_memory_v2(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, float8, text[], text, text, text) IS
'write_memory_v1 on insert_memory_v3: an identical memory written less than p_dedup_seconds before p_now is returned (duplicate = true), else inserted with its search tokens (cap, model check AMF01/AMF03).';


-- update_memory_v1 that also replaces the search tokens: new content comes with its new
-- embedding AND its new tokens (p_tokens; NULL with new content = to be backfilled).
-- Tokens without new content are ignored (they belong to the text). It also carries the
-- manual-entry guard of update_memory_v2 (protect_manual_v1.sql, issue 14): with
-- p_protect_user a source = 'user' memory is refused with SQLSTATE AMP01 and nothing
-- changes. The row is locked (FOR UPDATE) before the check, so the check and the update
-- see the same row; source is never changed by an update.
--   psql> SELECT * FROM amrita_memory.update_memory_v3('QQPlatform_Private_10001',
--           '<32 hex id>', NULL, NULL, 9, false, NULL, NULL, NULL, now(), NULL, true);
CREATE OR REPLACE FUNCTION amrita_memory.update_memory_v3(
    p_partition text,
    p_id text,
    p_content text,
    p_tags text[],
    p_importance integer,
    p_set_category boolean,
    p_category text,
    p_embedding vector,
    p_fingerprint text,
    p_now timestamptz,
    p_tokens text[],
    p_protect_user boolean)
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
    updated_at timestamptz)
LANGUAGE plpgsql
AS $$
DECLARE
    v_source text;
BEGIN
    SELECT m.source INTO v_source
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = p_id
       FOR UPDATE;
    IF p_protect_user AND v_source = 'user' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMP01',
            MESSAGE = 'memory ' || p_id || ' was added by a person (source=user): '
                      || 'automatic processes may not change it',
            HINT = 'change it with /memory or the amrita-memory CLI';
    END IF;
    IF p_content IS NOT NULL AND p_embedding IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'update_memory_v3: new content needs its new embedding (pass NULL content to keep the text)';
    END IF;
    IF p_embedding IS NOT NULL THEN
        PERFORM amrita_memory.require_store_model_v1(p_fingerprint, vector_dims(p_embedding), p_now);
    END IF;

    RETURN QUERY
    WITH changed AS (
        UPDATE amrita_memory.memory m
           SET content = coalesce(p_content, m.content),
               tags = coalesce(p_tags, m.tags),
               importance = coalesce(p_importance, m.importance),
               category = CASE WHEN p_set_category THEN p_category ELSE m.category END,
               embedding = coalesce(p_embedding, m.embedding),
               embed_fingerprint = CASE WHEN p_embedding IS NULL THEN m.embed_fingerprint
                                        ELSE p_fingerprint END,
               search_tokens = CASE WHEN p_content IS NULL THEN m.search_tokens
                                    ELSE array_to_tsvector(p_tokens) END,
               tier_since = CASE
                   WHEN p_importance IS NOT NULL AND amrita_memory.importance_rank_v1(p_importance)
                        <> amrita_memory.importance_rank_v1(m.importance) THEN p_now
                   ELSE m.tier_since END,
               updated_at = p_now
         WHERE m.partition_key = p_partition AND m.id = p_id
        RETURNING m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
                  m.source, m.author, m.created_at, m.updated_at)
    SELECT * FROM changed;

    IF FOUND AND p_embedding IS NOT NULL THEN
        PERFORM amrita_memory.require_store_model_v1(p_fingerprint, vector_dims(p_embedding), p_now);
    END IF;
END
$$;
COMMENT ON FUNCTION amrita_memory.update_memory_v3(text, text, text, text[], integer, boolean, text, vector, text, timestamptz, text[], boolean) IS
'update_memory_v2 (manual-entry guard: with p_protect_user a source=user memory is refused, SQLSTATE AMP01) that also replaces the search tokens with the new content''s (NULL = keep a field; model check AMF01/AMF03; content without its embedding refused with 22023).';
