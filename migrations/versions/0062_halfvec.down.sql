-- 0062_halfvec's downgrade, frozen with it (never edited): Stored embeddings as halfvec: memory, knowledge and the re-embed's staging hold half-precision vectors, the per-partition HNSW indexes are halfvec_l2_ops over (embedding::halfvec(n)), and the search functions compute halfvec distances under their own names (0.14.1's bodies cannot run on a halfvec column, and 0.14.1 calls them during a rolling upgrade); the weighted fusion counts a similarity spread under 1e-3 as no signal (was 1e-6: the noise of half-precision vectors).

CREATE OR REPLACE FUNCTION amrita_memory.knowledge_search_v2(p_query vector, p_tokens text[], p_mode text, p_top_k integer, p_fusion text DEFAULT 'weighted'::text, p_rrf_k double precision DEFAULT 60, p_weight double precision DEFAULT 0.5)
 RETURNS TABLE(kid text, title text, summary text, distance double precision, keyword_score double precision, score double precision)
 LANGUAGE plpgsql
 STABLE
AS $function$
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
                    THEN k.embedding <-> p_query END AS distance
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
                                * coalesce(CASE WHEN max(r.similarity) OVER () - min(r.similarity) OVER () > 1e-6
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
$function$;

COMMENT ON FUNCTION amrita_memory.knowledge_search_v2(vector,text[],text,integer,text,double precision,double precision) IS 'Knowledge search in one statement: mode vector (the summary vector''s L2 distance, then kid), keyword (BM25 over title + summary + body tokens) or hybrid (rrf or weighted fusion, as the memories''; no decay). SQLSTATE 22023 for a bad mode or fusion.';

CREATE OR REPLACE FUNCTION amrita_memory.memory_block_v2(p_memo_keys text[], p_chat_key text, p_scope_keys text[], p_limit integer, p_query vector, p_top_k integer, p_profile_key text, p_known bigint)
 RETURNS TABLE(kind text, partition_key text, content text, id text, importance smallint, category text, updated_at timestamp with time zone)
 LANGUAGE sql
 STABLE
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
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
  ORDER BY vector_l2_squared_distance(m.embedding, p_query), m.id
  LIMIT p_top_k)
UNION ALL
SELECT 'profile', p.partition_key, p.summary, NULL, NULL, NULL, p.updated_at
  FROM amrita_memory.profile p
 WHERE p.partition_key = p_profile_key AND p.summary <> ''
   AND NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = p.partition_key)
$function$;

COMMENT ON FUNCTION amrita_memory.memory_block_v2(text[],text,text[],integer,vector,integer,text,bigint) IS 'The per-turn block in one round trip: the memos, loaded scopes, memories and relevant memories of the chat''s partitions and the profile summary, none of a paused partition (one row of kind paused names each paused partition asked for), and a version row: the candidates are sent only when p_known differs from it. Generic plan.';

CREATE OR REPLACE FUNCTION amrita_memory.memory_block_v3(p_memo_keys text[], p_chat_key text, p_scope_keys text[], p_limit integer, p_query vector, p_top_k integer, p_profile_key text, p_known bigint)
 RETURNS TABLE(kind text, partition_key text, content text, id text, importance smallint, category text, updated_at timestamp with time zone)
 LANGUAGE sql
 STABLE
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
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
  ORDER BY vector_l2_squared_distance(m.embedding, p_query), m.id
  LIMIT p_top_k)
UNION ALL
SELECT 'profile', p.partition_key, p.summary, NULL, NULL, NULL, p.updated_at
  FROM amrita_memory.profile p
 WHERE p.partition_key = p_profile_key AND p.summary <> ''
   AND NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = p.partition_key)
$function$;

COMMENT ON FUNCTION amrita_memory.memory_block_v3(text[],text,text[],integer,vector,integer,text,bigint) IS 'The per-turn block in one round trip, as memory_block_v2 (memos, loaded scopes, memories, relevant memories, profile summary, paused and version rows) with the candidates read per partition by block_candidates_v1, through a partition''s block index where it has one. Generic plan.';

CREATE OR REPLACE FUNCTION amrita_memory.score_hybrid_rrf_v6(p_partition text, p_query vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_rrf_k double precision, p_ids text[])
 RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
 LANGUAGE sql
 STABLE
AS $function$
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
$function$;

COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v6(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision,text[]) IS 'Hybrid mode, rrf fusion, of search_memories_v6: reciprocal ranks of the vector and keyword sides times the decay factor, on narrow rows; the top k joined back for their content.';

CREATE OR REPLACE FUNCTION amrita_memory.score_hybrid_rrf_v8(p_partition text, p_query vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_rrf_k double precision)
 RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
 LANGUAGE sql
 STABLE
AS $function$
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
$function$;

COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v8(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision) IS 'Hybrid mode, rrf fusion, of search_memories_v8 over every row of the partition: reciprocal ranks of the vector and keyword sides times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

CREATE OR REPLACE FUNCTION amrita_memory.score_hybrid_weighted_v6(p_partition text, p_query vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_weight double precision, p_ids text[])
 RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
 LANGUAGE sql
 STABLE
AS $function$
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
$function$;

COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v6(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision,text[]) IS 'Hybrid mode, weighted fusion, of search_memories_v6: normalised similarity and bm25 / max bm25, weighted, times the decay factor, on narrow rows; the top k joined back for their content.';

CREATE OR REPLACE FUNCTION amrita_memory.score_hybrid_weighted_v8(p_partition text, p_query vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_weight double precision)
 RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
 LANGUAGE sql
 STABLE
AS $function$
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
$function$;

COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v8(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision) IS 'Hybrid mode, weighted fusion, of search_memories_v8 over every row of the partition: normalised similarity and bm25 / max bm25, weighted, times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

CREATE OR REPLACE FUNCTION amrita_memory.score_memories_v1(p_partition text, p_query vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_fusion text, p_rrf_k double precision, p_weight double precision, p_ids text[])
 RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
 LANGUAGE sql
 STABLE
AS $function$
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
$function$;

COMMENT ON FUNCTION amrita_memory.score_memories_v1(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,text,double precision,double precision,text[]) IS 'Score the rows of one partition (all, or the candidate ids p_ids), every mode in one body: vector similarity, BM25 over the search tokens, fusion by mode (vector | keyword | hybrid; rrf or weighted), times the decay factor. The Chroma backend''s keyword candidates.';

CREATE OR REPLACE FUNCTION amrita_memory.search_vector_ann_v5(p_partition text, p_query vector, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer)
 RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
 LANGUAGE plpgsql
 STABLE
AS $function$
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
$function$;

COMMENT ON FUNCTION amrita_memory.search_vector_ann_v5(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer) IS 'Vector mode on a partition with its own HNSW index: the p_candidates nearest filtered rows by that index, re-ranked by decay score.';

CREATE OR REPLACE FUNCTION amrita_memory.search_vector_exact_v5(p_partition text, p_query vector, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text)
 RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
 LANGUAGE sql
 STABLE
AS $function$
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
$function$;

COMMENT ON FUNCTION amrita_memory.search_vector_exact_v5(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text) IS 'Vector mode over every row of the partition: 1/(1+squared L2) x max(0.5^(age/half_life), floor), top_k.';

