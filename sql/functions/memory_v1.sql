-- L2 memory operations, version 1: insert under the partition cap, decay-scored
-- retrieval, and the batched tiered sweep. Python calls these by name
-- (amrita_memory_pg/storage/pg/memories.py); an operator can call them from psql.
-- Released files are never edited: a change is a new file (memory_v2.sql) and a
-- new migration. Vectors are compared by SQUARED L2 distance, which is what Chroma
-- reports as "l2", so scores match the reference plugin's numbers.

-- Insert one memory unless its partition already holds p_cap rows.
--
-- The count and the insert run in one transaction under a transaction-level advisory
-- lock on the partition, so N concurrent writers can never leave more than p_cap rows
-- (a plain count-then-insert lets them all pass the count). The embedding is computed
-- by the caller BEFORE this call: the lock is held for microseconds, never during an
-- HTTP request. The first vector ever written records its model (fingerprint and
-- dimension) in store_meta; a vector from any other model is refused (SQLSTATE AMF01)
-- instead of silently mixing incomparable vectors.
--
-- Returns one row: the new id (NULL when the partition is full) and the count before.
CREATE OR REPLACE FUNCTION amrita_memory.insert_memory_v1(
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
    v_active text;
    v_count integer;
    v_id text;
BEGIN
    SELECT s.embed_fingerprint INTO v_active FROM amrita_memory.store_meta s WHERE s.id = 1;
    IF v_active IS NULL THEN
        -- Zero friction on an empty store: the first writer's model becomes the active one.
        UPDATE amrita_memory.store_meta s
           SET embed_fingerprint = p_fingerprint,
               embed_dim = vector_dims(p_embedding),
               embed_protocol = p_protocol,
               embed_model = p_model,
               embed_base_url = p_base_url,
               updated_at = p_now
         WHERE s.id = 1 AND s.embed_fingerprint IS NULL;
        SELECT s.embed_fingerprint INTO v_active FROM amrita_memory.store_meta s WHERE s.id = 1;
    END IF;
    IF v_active IS DISTINCT FROM p_fingerprint THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF01',
            MESSAGE = 'embedding model mismatch: the store holds vectors of fingerprint '
                      || coalesce(v_active, '?') || ', this writer uses ' || p_fingerprint,
            HINT = 'run `amrita-memory reindex`, or configure the model the store was built with';
    END IF;

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
    RETURN QUERY SELECT v_id, v_count;
END
$$;


-- Decay-scored retrieval in one statement.
--
--   distance    = squared L2 (vector_l2_squared_distance)
--   decay_score = 1/(1+distance) × max(0.5^(age/half_life(importance)), floor)
--   age         = days since created_at at p_now
--
-- Small partitions (the normal case: ≤ per_session_memory_limit rows) are scanned
-- exactly through the (partition_key, created_at, id) index and EVERY row is scored,
-- so the result is the true top_k by final score — unlike the reference, which only
-- re-ranks the 3×top_k nearest. A partition listed in ann_index (a busy group, the
-- global scope: thousands of rows) instead takes p_candidates nearest rows from its
-- own partial HNSW index (iterative scan on pgvector ≥ 0.8, so filters still yield
-- enough rows) and re-ranks those. With p_decay false the score is the similarity
-- alone (pure distance order). Ties break by (created_at, id): results are deterministic.
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_v1(
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
    v_ann boolean;
BEGIN
    SELECT true INTO v_ann
      FROM amrita_memory.ann_index a
     WHERE a.partition_key = p_partition AND a.dim = v_dim;

    IF v_ann IS NULL THEN
        RETURN QUERY
        SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
               m.source, m.author, m.created_at, m.updated_at, s.distance, x.score, s.age
          FROM amrita_memory.memory m
          CROSS JOIN LATERAL (
                SELECT vector_l2_squared_distance(m.embedding, p_query) AS distance,
                       amrita_memory.age_days_v1(m.created_at, p_now) AS age) s
          CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN amrita_memory.decay_score_v1(
                                     s.distance, s.age, m.importance, p_base_days, p_boost, p_floor)
                            ELSE amrita_memory.similarity_v1(s.distance) END AS score) x
         WHERE m.partition_key = p_partition
           AND (p_importance_min IS NULL OR m.importance >= p_importance_min)
           AND (p_importance_max IS NULL OR m.importance <= p_importance_max)
           AND (p_scope IS NULL OR m.scope = p_scope)
           AND (p_tags IS NULL OR m.tags && p_tags)
         ORDER BY x.score DESC, s.distance, m.created_at, m.id
         LIMIT p_top_k;
        RETURN;
    END IF;

    -- Large partition: the partial index's predicate (partition and dimension literals)
    -- must appear verbatim for the planner to use it, hence dynamic SQL.
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
                   AND ($9::integer IS NULL OR m.importance >= $9)
                   AND ($10::integer IS NULL OR m.importance <= $10)
                   AND ($11::text IS NULL OR m.scope = $11)
                   AND ($12::text[] IS NULL OR m.tags && $12)
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


-- One batch of the tiered sweep (reference §5.2), set-based.
--
-- Visits up to p_batch rows in id order after the cursor (the persisted one in
-- sweep_state when p_cursor is NULL), optionally not beyond p_until. Each row past
-- its tier lifetime is demoted one tier (high → 5, medium → 3) or, when low, purged.
-- The lifetime is measured from tier_since when p_restart_clock (a demoted memory
-- gets a fresh lifetime in its new tier), else from created_at (the reference: a
-- demotion is then only a delayed purge). Rows locked by a concurrent edit are
-- skipped (they come round again on the next pass). Unless p_dry_run, the cursor is
-- saved in the same transaction, so successive batches and successive runs visit
-- every row; at the end of the table it wraps to the start. Returns the purged ids so
-- that a secondary vector index (chroma) can drop them too.
CREATE OR REPLACE FUNCTION amrita_memory.sweep_batch_v1(
    p_now timestamptz,
    p_short_days float8,
    p_long_days float8,
    p_batch integer,
    p_restart_clock boolean,
    p_dry_run boolean DEFAULT false,
    p_cursor text DEFAULT NULL,
    p_until text DEFAULT NULL)
RETURNS TABLE (
    scanned integer,
    demoted integer,
    purged integer,
    kept integer,
    next_cursor text,
    wrapped boolean,
    purged_ids text[])
LANGUAGE plpgsql
AS $$
DECLARE
    v_cursor text := p_cursor;
    v_last text;
BEGIN
    IF v_cursor IS NULL THEN
        -- The row lock also keeps two sweeps from working the same batch at once.
        SELECT s.cursor_id INTO v_cursor FROM amrita_memory.sweep_state s WHERE s.id = 1 FOR UPDATE;
        v_cursor := coalesce(v_cursor, '');
    END IF;

    -- One statement: plan the batch, then demote and purge from the same snapshot.
    -- The CTE "batch" is referenced several times, so it is materialised once.
    WITH batch AS (
        SELECT m.id, m.importance,
               amrita_memory.sweep_action_v1(
                   m.importance,
                   amrita_memory.age_days_v1(
                       CASE WHEN p_restart_clock THEN m.tier_since ELSE m.created_at END, p_now),
                   p_short_days, p_long_days) AS action
          FROM amrita_memory.memory m
         WHERE m.id > v_cursor AND (p_until IS NULL OR m.id <= p_until)
         ORDER BY m.id
         LIMIT p_batch
         FOR UPDATE SKIP LOCKED
    ), demote AS (
        UPDATE amrita_memory.memory m
           SET importance = amrita_memory.demoted_importance_v1(b.importance),
               tier_since = CASE WHEN p_restart_clock THEN p_now ELSE m.tier_since END
          FROM batch b
         WHERE m.id = b.id AND b.action = 'demote' AND NOT p_dry_run
        RETURNING m.id
    ), purge AS (
        DELETE FROM amrita_memory.memory m
         USING batch b
         WHERE m.id = b.id AND b.action = 'purge' AND NOT p_dry_run
        RETURNING m.id
    )
    SELECT (SELECT count(*)::integer FROM batch),
           (SELECT max(b.id) FROM batch b),
           CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'demote')
                ELSE (SELECT count(*)::integer FROM demote) END,
           CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT count(*)::integer FROM purge) END,
           CASE WHEN p_dry_run
                THEN (SELECT coalesce(array_agg(b.id ORDER BY b.id), '{}') FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT coalesce(array_agg(g.id ORDER BY g.id), '{}') FROM purge g) END
      INTO scanned, v_last, demoted, purged, purged_ids;

    kept := scanned - demoted - purged;
    -- Fewer rows than asked: the end of the table (or p_until) is reached. At the end the
    -- cursor wraps to the start; at p_until it stays there (the rest was swept already).
    wrapped := scanned < p_batch;
    next_cursor := CASE WHEN wrapped THEN coalesce(p_until, '') ELSE v_last END;
    IF NOT p_dry_run AND p_cursor IS NULL THEN
        UPDATE amrita_memory.sweep_state s
           SET cursor_id = next_cursor, updated_at = p_now,
               passes = s.passes + CASE WHEN wrapped AND p_until IS NULL THEN 1 ELSE 0 END
         WHERE s.id = 1;
    END IF;
    RETURN NEXT;
END
$$;
