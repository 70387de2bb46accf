-- L2 retrieval, version 2: the same results as search_memories_v1, faster on the
-- common path (a partition of ≤ per_session_memory_limit rows).
--
-- Why a v2: v1 computes the whole score inside one PL/pgSQL RETURN QUERY, where the
-- planner substitutes the age expression into decay_factor_v1, which then cannot be
-- inlined (its parameters are used several times) and runs as a function call per row.
-- Here the exact path is a plain SQL function (inlined into the caller's plan) whose
-- inner subquery materialises distance, age and half-life first (OFFSET 0 keeps it a
-- subquery), so the decay factor is evaluated inline on plain columns. Same formula,
-- same float operations in the same order: the scores are bit-identical to v1's
-- (tests/integration/test_search_v2.py). Measured on 100-row partitions of a 100k table:
-- p50 0.82 ms → 0.50 ms (bench/bench_l2.py). Large partitions (ann_index) still take
-- v1's HNSW path unchanged.

-- Exact scoring of every row of one partition: the true top_k by decay score.
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_exact_v2(
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
               AND (p_importance_min IS NULL OR m.importance >= p_importance_min)
               AND (p_importance_max IS NULL OR m.importance <= p_importance_max)
               AND (p_scope IS NULL OR m.scope = p_scope)
               AND (p_tags IS NULL OR m.tags && p_tags)
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

-- Decay-scored retrieval: the exact path above, or v1's HNSW path for a partition
-- listed in ann_index. Arguments and result columns are those of search_memories_v1.
CREATE OR REPLACE FUNCTION amrita_memory.search_memories_v2(
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
BEGIN
    IF EXISTS (SELECT 1 FROM amrita_memory.ann_index a
                WHERE a.partition_key = p_partition AND a.dim = vector_dims(p_query)) THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.search_memories_v1(
            p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
            p_importance_min, p_importance_max, p_scope, p_tags, p_candidates);
        RETURN;
    END IF;
    RETURN QUERY
    SELECT * FROM amrita_memory.search_memories_exact_v2(
        p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
        p_importance_min, p_importance_max, p_scope, p_tags);
END
$$;
