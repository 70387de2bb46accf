-- L2 memory operations, release 3 (migration 0006). Released files are never edited: a
-- change is a new file and a new migration (tests/unit/test_released_sql.py pins this
-- one's sha256 in sql/RELEASED.sha256).
--
-- What is new here, and why:
--   * memory_matches_v1: the optional search filters (importance range, scope, tags),
--     written ONCE. They were written four times (search v1 exact and ANN, v2, the
--     chroma backend's candidate query) and had to be kept in step by hand.
--   * search_memories_v3 (+ _exact_v3, _ann_v3): v2's plans and scores (bit-identical,
--     tests/integration/test_search_v3.py), the filters through memory_matches_v1, and
--     a query of another dimension than store_meta.embed_dim refused with SQLSTATE AMF03
--     instead of pgvector's generic 22000 "different vector dimensions", so Python maps
--     the error by SQLSTATE, never by message text.
--   * require_store_model_v1, insert_memory_v2, update_memory_v1: every write of a
--     vector checks the fingerprint (AMF01) AND the dimension (AMF03) against store_meta,
--     and records both when they are still NULL. insert_memory_v1 compared fingerprints
--     only, and UPDATE checked nothing (issue 11, F1 and F2).
--
-- SQLSTATEs raised here (Python maps these codes, never the message text):
--   AMF01  the vector comes from another embedding model (fingerprint) than the store's
--   AMF03  the vector has another dimension than the store's (same fingerprint: a model
--          that changed under its pinned name, or an embed_dim recorded by a re-embed)
--   22023  update_memory_v1 was given new content without its new embedding
-- (AMF02, from reembed_switch_v1: staged vectors of one fingerprint with mixed dimensions.)


-- The optional filters of every search, on top of the partition (which callers keep as a
-- plain `m.partition_key = $1` so that the btree, and Citus's router, see it):
--   importance between p_min and p_max (1–10, either bound NULL = open),
--   scope = p_want_scope (NULL = any), at least one of p_any_tags (NULL = any).
-- A single-expression, IMMUTABLE, non-STRICT SQL function: the planner INLINES it, so a
-- query that calls it gets exactly the predicate written out (EXPLAIN shows no call).
-- Do not make it STRICT (an inlined strict function must be strict in every argument,
-- which `IS NULL OR …` is not), plpgsql, SECURITY DEFINER or SET-configured: each of
-- those stops inlining and turns the filter into a function call per row. Column
-- arguments, not a whole-row one: a whole-row argument would build the row (vector
-- included) for every candidate.
--   psql> SELECT count(*) FROM amrita_memory.memory m WHERE m.partition_key = 'global'
--           AND amrita_memory.memory_matches_v1(m.importance, m.scope, m.tags, 8, NULL, NULL, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.memory_matches_v1(
    p_importance smallint,
    p_scope text,
    p_tags text[],
    p_min integer,
    p_max integer,
    p_want_scope text,
    p_any_tags text[])
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT (p_min IS NULL OR p_importance >= p_min)
       AND (p_max IS NULL OR p_importance <= p_max)
       AND (p_want_scope IS NULL OR p_scope = p_want_scope)
       AND (p_any_tags IS NULL OR p_tags && p_any_tags)
$$;
COMMENT ON FUNCTION amrita_memory.memory_matches_v1(smallint, text, text[], integer, integer, text, text[]) IS
'Search filter on top of the partition: importance in [p_min, p_max] (NULL = open), scope = p_want_scope (NULL = any), any of p_any_tags (NULL = any). Inlined by the planner; used by every search.';


-- Exact scoring of every row of one partition: the true top_k by decay score. Same
-- query as search_memories_exact_v2 (read that header: the OFFSET 0 subquery materialises
-- distance, age and half-life so the decay factor is computed inline on plain columns);
-- only the filter is now memory_matches_v1, which inlines to the identical predicate.
--   decay_score = 1/(1+distance) × max(0.5^(age/half_life(importance)), floor)
--   distance = squared L2; age and half-life in days.
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_exact_v3(
    p_partition text,
    p_query vector,
    p_top_k integer,
    p_now timestamptz,
    p_decay boolean,
    p_base_days float8,
    p_boost float8,
    p_floor float8,
    p_importance_min integer DEFAULT NULL,
    p_importance_max integer DEFAULT NULL,
    p_scope text DEFAULT NULL,
    p_tags text[] DEFAULT NULL)
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
    age_days float8)
LANGUAGE sql STABLE
AS $$
    SELECT c.id, c.partition_key, c.scope, c.content, c.tags, c.importance, c.category,
           c.source, c.author, c.created_at, c.updated_at, c.distance, x.score, c.age
      FROM (SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance,
                   m.category, m.source, m.author, m.created_at, m.updated_at,
                   vector_l2_squared_distance(m.embedding, p_query) AS distance,
                   amrita_memory.age_days_v1(m.created_at, p_now) AS age,
                   amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
              FROM amrita_memory.memory m
             WHERE m.partition_key = p_partition
               AND amrita_memory.memory_matches_v1(
                       m.importance, m.scope, m.tags,
                       p_importance_min, p_importance_max, p_scope, p_tags)
            OFFSET 0) c
      CROSS JOIN LATERAL (
            -- = decay_score_v1(distance, age, importance, base, boost, floor)
            SELECT CASE WHEN p_decay
                        THEN amrita_memory.similarity_v1(c.distance)
                             * amrita_memory.decay_factor_v1(c.age, c.half_life, p_floor)
                        ELSE amrita_memory.similarity_v1(c.distance) END AS score) x
     ORDER BY x.score DESC, c.distance, c.created_at, c.id
     LIMIT p_top_k
$$;
COMMENT ON FUNCTION amrita_memory.search_memories_exact_v3(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[]) IS
'Exact decay-scored top_k of one partition (every row scored through the partition btree): score = 1/(1+squared L2) x max(0.5^(age_days/half_life_days), floor). Same results as search_memories_exact_v2.';


-- The HNSW path of a large partition (one listed in ann_index, with its own partial
-- index): the p_candidates nearest rows by the index, re-ranked by decay score. The body
-- is search_memories_v1's ANN branch with the filter through memory_matches_v1 (same
-- scores, bit for bit). Dynamic SQL because the partial index's predicate (partition and
-- dimension literals) must appear verbatim in the query for the planner to use it.
-- hnsw.iterative_scan (pgvector ≥ 0.8) lets the index keep yielding rows while filters
-- reject some; both settings last until the end of the caller's transaction.
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_ann_v3(
    p_partition text,
    p_query vector,
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
    p_candidates integer DEFAULT 200)
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
    age_days float8)
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
               c.source, c.author, c.created_at, c.updated_at, c.distance, c.score, c.age
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
                   AND amrita_memory.memory_matches_v1(m.importance, m.scope, m.tags, $9, $10, $11, $12)
                 ORDER BY (m.embedding::vector(%s)) <-> ($1::vector(%s))
                 LIMIT $3
               ) c
         ORDER BY c.score DESC, c.distance, c.created_at, c.id
         LIMIT $2
        $q$, p_partition, v_dim, v_dim, v_dim)
    USING p_query, p_top_k, greatest(p_candidates, p_top_k), p_now, p_decay, p_base_days,
          p_boost, p_floor, p_importance_min, p_importance_max, p_scope, p_tags;
END
$$;
COMMENT ON FUNCTION amrita_memory.search_memories_ann_v3(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], integer) IS
'HNSW path of a large partition (listed in ann_index): p_candidates nearest rows from its partial index, re-ranked by decay score. Same results as search_memories_v1''s ANN branch.';


-- Decay-scored retrieval, the entry point: refuses a query vector of another dimension
-- than the store's (AMF03; skipped while store_meta.embed_dim is unrecorded), then takes
-- the HNSW path for a partition listed in ann_index and the exact path otherwise. One
-- primary-key lookup decides both (v2 needed one for the ann_index check alone).
-- Arguments and result columns are those of search_memories_v1/v2.
--   psql> SELECT id, round(decay_score::numeric, 4), content FROM amrita_memory.search_memories_v3(
--           'QQPlatform_Private_10001', (SELECT embedding FROM amrita_memory.memory LIMIT 1),
--           5, now(), true, 30, 1, 0.05);
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_v3(
    p_partition text,
    p_query vector,
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
    p_candidates integer DEFAULT 200)
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
    age_days float8)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_dim integer := vector_dims(p_query);
    v_store_dim integer;
    v_ann boolean;
BEGIN
    SELECT s.embed_dim,
           EXISTS (SELECT 1 FROM amrita_memory.ann_index a
                    WHERE a.partition_key = p_partition AND a.dim = v_dim)
      INTO v_store_dim, v_ann
      FROM amrita_memory.store_meta s
     WHERE s.id = 1;
    IF v_store_dim IS DISTINCT FROM v_dim AND v_store_dim IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF03',
            MESSAGE = format('embedding dimension mismatch: the store holds %s-dimensional vectors, '
                             'this query has %s dimensions', v_store_dim, v_dim),
            HINT = 'run `amrita-memory reindex`, or configure the model the store was built with';
    END IF;
    IF v_ann THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.search_memories_ann_v3(
            p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
            p_importance_min, p_importance_max, p_scope, p_tags, p_candidates);
        RETURN;
    END IF;
    RETURN QUERY
    SELECT * FROM amrita_memory.search_memories_exact_v3(
        p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
        p_importance_min, p_importance_max, p_scope, p_tags);
END
$$;
COMMENT ON FUNCTION amrita_memory.search_memories_v3(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], integer) IS
'Decay-scored retrieval in one partition (the runtime entry point): exact path, or the HNSW path for partitions in ann_index. Refuses a query of another dimension than store_meta.embed_dim with SQLSTATE AMF03.';


-- The model check of every write of a vector: p_fingerprint must be the store's
-- (store_meta.embed_fingerprint, else AMF01) and p_dim its dimension (embed_dim, else
-- AMF03). Whatever is still unrecorded is recorded first, in the caller's transaction:
-- the fingerprint is the first writer's (as insert_memory_v1 did); the dimension is the
-- writer's unless the stored vectors prove it wrong (rows exist and none has it: then
-- theirs, and the writer is refused). That path is rare (the first write of a store, or
-- the first after an upgrade from a release that never recorded embed_dim) and locks:
-- the memory table in ROW EXCLUSIVE mode first (what the caller's INSERT/UPDATE takes
-- anyway; taking it before the store_meta row keeps the lock order of reembed_switch_v1,
-- so the two cannot deadlock), then the store_meta row, so two first writers of
-- different models cannot both record theirs. The common path is one primary-key read.
--   psql> SELECT amrita_memory.require_store_model_v1('<fingerprint>', 384, now());
CREATE OR REPLACE FUNCTION amrita_memory.require_store_model_v1(
    p_fingerprint text,
    p_dim integer,
    p_now timestamptz,
    p_protocol text DEFAULT NULL,
    p_model text DEFAULT NULL,
    p_base_url text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_fingerprint text;
    v_dim integer;
BEGIN
    SELECT s.embed_fingerprint, s.embed_dim INTO v_fingerprint, v_dim
      FROM amrita_memory.store_meta s WHERE s.id = 1;
    IF v_fingerprint IS NULL OR v_dim IS NULL THEN
        LOCK TABLE amrita_memory.memory IN ROW EXCLUSIVE MODE;
        SELECT s.embed_fingerprint, s.embed_dim INTO v_fingerprint, v_dim
          FROM amrita_memory.store_meta s WHERE s.id = 1 FOR UPDATE;
        IF v_dim IS NULL THEN
            IF EXISTS (SELECT 1 FROM amrita_memory.memory m WHERE vector_dims(m.embedding) = p_dim)
               OR EXISTS (SELECT 1 FROM amrita_memory.knowledge k WHERE vector_dims(k.embedding) = p_dim)
               OR NOT (EXISTS (SELECT 1 FROM amrita_memory.memory)
                       OR EXISTS (SELECT 1 FROM amrita_memory.knowledge)) THEN
                v_dim := p_dim;
            ELSE
                SELECT vector_dims(x.embedding) INTO v_dim
                  FROM (SELECT m.embedding FROM amrita_memory.memory m LIMIT 1) x;
                IF v_dim IS NULL THEN
                    SELECT vector_dims(k.embedding) INTO v_dim FROM amrita_memory.knowledge k LIMIT 1;
                END IF;
            END IF;
        END IF;
        IF v_fingerprint IS NULL THEN
            UPDATE amrita_memory.store_meta s
               SET embed_fingerprint = p_fingerprint, embed_protocol = p_protocol,
                   embed_model = p_model, embed_base_url = p_base_url,
                   embed_dim = v_dim, updated_at = p_now
             WHERE s.id = 1;
            v_fingerprint := p_fingerprint;
        ELSE
            UPDATE amrita_memory.store_meta s SET embed_dim = v_dim, updated_at = p_now
             WHERE s.id = 1;
        END IF;
    END IF;
    IF v_fingerprint IS DISTINCT FROM p_fingerprint THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF01',
            MESSAGE = 'embedding model mismatch: the store holds vectors of fingerprint '
                      || v_fingerprint || ', this writer uses ' || coalesce(p_fingerprint, '?'),
            HINT = 'run `amrita-memory reindex`, or configure the model the store was built with';
    END IF;
    IF v_dim IS DISTINCT FROM p_dim THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF03',
            MESSAGE = format('embedding dimension mismatch: the store holds %s-dimensional vectors '
                             'of fingerprint %s, this writer''s vector has %s dimensions',
                             v_dim, v_fingerprint, coalesce(p_dim::text, '?')),
            HINT = 'the model changed under its name: run `amrita-memory reindex`, '
                   'or configure the model the store was built with';
    END IF;
END
$$;
COMMENT ON FUNCTION amrita_memory.require_store_model_v1(text, integer, timestamptz, text, text, text) IS
'Model check of every vector write: fingerprint must equal store_meta.embed_fingerprint (else SQLSTATE AMF01) and dimension store_meta.embed_dim (else AMF03); records either when still NULL.';


-- Insert one memory unless its partition already holds p_cap rows: insert_memory_v1
-- (same arguments, same result: the new id, NULL when full, and the count before) with
-- the full model check. The cap: count and insert run under a transaction-level advisory
-- lock on the partition, so N concurrent writers never leave more than p_cap rows; the
-- embedding is computed by the caller BEFORE this call, so the lock is held for
-- microseconds, never during an HTTP request.
--
-- The model is checked twice. Before: a writer on the wrong model does no work and is
-- refused even when the partition is full. After the INSERT: the INSERT holds the
-- table's ROW EXCLUSIVE lock, which conflicts with reembed_switch_v1's SHARE ROW
-- EXCLUSIVE, so either the switch committed before it (and this second read sees the
-- new model: refused, the insert rolls back) or it waits for this transaction (and then
-- finds this row without a staged vector, so it does not switch yet). Without the second
-- check an insert that read store_meta just before a switch committed could land an
-- old-model vector after it.
CREATE OR REPLACE FUNCTION amrita_memory.insert_memory_v2(
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

    -- hashtextextended: a 64-bit key; a collision only serialises two unrelated partitions.
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
            created_at, updated_at, tier_since, embedding, embed_fingerprint)
    VALUES (p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, p_category,
            p_source, p_author, p_now, p_now, p_now, p_embedding, p_fingerprint)
    RETURNING m.id INTO v_id;

    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, v_dim, p_now, p_protocol, p_model, p_base_url);
    RETURN QUERY SELECT v_id, v_count;
END
$$;
COMMENT ON FUNCTION amrita_memory.insert_memory_v2(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text, text, text) IS
'Insert one memory under the per-partition cap (advisory lock; id NULL when full) after the model check: SQLSTATE AMF01 for another fingerprint, AMF03 for another dimension.';


-- Change some fields of one memory of one partition; zero rows when the id is not in
-- the partition. NULL leaves a field as it is (category: p_set_category says whether
-- p_category, possibly NULL, replaces it). New content comes with its new embedding
-- (computed by the caller before this call), which is model-checked like an insert,
-- before and after the UPDATE for the reason given at insert_memory_v2; content
-- without an embedding is refused (22023): text and vector would no longer match.
-- created_at is kept (the memory's age); a change of importance TIER restarts the
-- sweep's clock (tier_since); updated_at = p_now, which also invalidates a vector
-- staged by a re-embed in progress (it is re-staged from the new text).
--   psql> SELECT * FROM amrita_memory.update_memory_v1('QQPlatform_Private_10001',
--           '<32 hex id>', NULL, NULL, 9, false, NULL, NULL, NULL, now());
CREATE OR REPLACE FUNCTION amrita_memory.update_memory_v1(
    p_partition text,
    p_id text,
    p_content text,
    p_tags text[],
    p_importance integer,
    p_set_category boolean,
    p_category text,
    p_embedding vector,
    p_fingerprint text,
    p_now timestamptz)
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
BEGIN
    IF p_content IS NOT NULL AND p_embedding IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'update_memory_v1: new content needs its new embedding (pass NULL content to keep the text)';
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
COMMENT ON FUNCTION amrita_memory.update_memory_v1(text, text, text, text[], integer, boolean, text, vector, text, timestamptz) IS
'Update one memory of one partition (NULL = keep; zero rows when the id is not there). A new embedding is model-checked like an insert (AMF01 / AMF03); new content without one is refused (22023).';
