-- The global knowledge base, release 2 (migration 0017_kb_hybrid): hybrid vector +
-- keyword search over title + summary + body (issue 16). Released files are never edited:
-- a change is a new file and a new migration. Release 1 (knowledge_v1.sql) stays
-- installed (additive): older code keeps working on an upgraded schema.
--
-- The keyword side is the memories' (memory_v4.sql, read its header): knowledge.search_tokens
-- is a tsvector of tokens made in Python (amrita_memory_pg/domain/tokens.py) from
-- title || '\n' || summary || '\n' || body (domain/knowledge.py knowledge_search_text),
-- stored with array_to_tsvector (lexemes as given, no parser, no locale), NULL = not
-- tokenized yet (rows written before 0017 or restored from a backup: the backfill
-- amrita_memory_pg/maintenance/tokens.py fills them in; meanwhile they are found by the
-- vector side only). knowledge.search_len (generated: length(search_tokens)) is the
-- token count BM25 normalises by, kept in the row so the average length needs no
-- de-TOASTing of every tsvector (a body may give 4,000 tokens).
--
-- The vector side is release 1's: the L2 distance (<->) of the SUMMARY's vector, exact
-- scan (the table is small), rows of another dimension than the query's never compared.
--
-- Scores, with the memories' BM25 (k1 = 1.2, b = 0.75, tf = 1, statistics over the
-- whole table) and the memories' fusion, WITHOUT the time decay (knowledge does not age):
--   vector:  similarity = 1/(1 + distance²) (similarity_v1 of the squared distance);
--            the order of knowledge_search_v1 (distance, kid)
--   keyword: bm25, only entries sharing a token with the query; needs no query vector
--   hybrid:  rrf      = 1/(p_rrf_k + vector rank) + 1/(p_rrf_k + keyword rank)
--            weighted = (1 - p_weight) × similarity min-max-normalised over the entries
--                       (1 when their spread is under 1e-6) + p_weight × bm25 / max bm25
--            (an entry of another dimension may still match by keyword: no vector term)
-- SQLSTATE 22023 for an unknown p_mode or p_fusion, or vector/hybrid without p_query.
--
-- Writes: knowledge_create_v2 stores the tokens given with the text. A line-range update
-- makes the new body in SQL, so knowledge_update_v2 clears the tokens of a row whose
-- text changed and returns the new text: the caller tokenizes it and stores the tokens
-- (knowledge_set_tokens_v1) in the same transaction; if it does not, the backfill does.


-- Create an entry with its search tokens (p_tokens; NULL = to be backfilled). Otherwise
-- knowledge_create_v1: status created | too_long | exists; the model check AMF01/AMF03.
--   psql> SELECT * FROM amrita_memory.knowledge_create_v2('0a1b2c3d', '标题', '摘要', '正文',
--           (SELECT embedding FROM amrita_memory.memory LIMIT 1), '<fingerprint>', 10000, now(),
--           ARRAY['标', '标题', '题']);
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_create_v2(
    p_kid text, p_title text, p_summary text, p_body text,
    p_embedding vector, p_fingerprint text, p_max_chars integer, p_now timestamptz,
    p_tokens text[],
    p_protocol text DEFAULT NULL, p_model text DEFAULT NULL, p_base_url text DEFAULT NULL)
RETURNS TABLE (status text, kid text, total_lines integer, char_count integer)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
BEGIN
    IF char_length(p_body) > p_max_chars THEN
        RETURN QUERY SELECT 'too_long'::text, p_kid, 0, char_length(p_body);
        RETURN;
    END IF;
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    INSERT INTO amrita_memory.knowledge AS k
           (kid, title, summary, body, embedding, embed_fingerprint, created_at, updated_at,
            search_tokens)
    VALUES (p_kid, p_title, p_summary, p_body, p_embedding, p_fingerprint, p_now, p_now,
            array_to_tsvector(p_tokens))
    ON CONFLICT (kid) DO NOTHING;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'exists'::text, p_kid, 0, 0;
        RETURN;
    END IF;
    RETURN QUERY SELECT 'created'::text, p_kid,
                        cardinality(amrita_memory.knowledge_lines_v1(p_body)), char_length(p_body);
END
$$;


-- knowledge_update_v1 (same arguments, statuses and refusals) that clears the search
-- tokens when the title, summary or body changed, and returns the entry's text after the
-- update (NULL columns for a refusal), which the caller tokenizes.
--   psql> SELECT status, title FROM amrita_memory.knowledge_update_v2('0a1b2c3d', '新标题',
--           NULL, NULL, NULL, NULL, NULL, NULL, 10000, now());
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_update_v2(
    p_kid text, p_title text, p_summary text, p_body text, p_start integer, p_end integer,
    p_embedding vector, p_fingerprint text, p_max_chars integer, p_now timestamptz,
    p_protocol text DEFAULT NULL, p_model text DEFAULT NULL, p_base_url text DEFAULT NULL)
RETURNS TABLE (status text, kid text, total_lines integer, char_count integer,
               title text, summary text, body text)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_status text;
    v_total integer;
    v_chars integer;
BEGIN
    SELECT u.status, u.total_lines, u.char_count INTO v_status, v_total, v_chars
      FROM amrita_memory.knowledge_update_v1(
               p_kid, p_title, p_summary, p_body, p_start, p_end, p_embedding, p_fingerprint,
               p_max_chars, p_now, p_protocol, p_model, p_base_url) u;
    IF v_status <> 'updated' THEN
        RETURN QUERY SELECT v_status, p_kid, v_total, v_chars, NULL::text, NULL::text, NULL::text;
        RETURN;
    END IF;
    IF p_title IS NOT NULL OR p_summary IS NOT NULL OR p_body IS NOT NULL THEN
        UPDATE amrita_memory.knowledge k SET search_tokens = NULL WHERE k.kid = p_kid;
    END IF;
    RETURN QUERY SELECT v_status, k.kid, v_total, v_chars, k.title, k.summary, k.body
                   FROM amrita_memory.knowledge k WHERE k.kid = p_kid;
END
$$;


-- Store the search tokens p_tokens of entry p_kid, made from the text (p_title,
-- p_summary, p_body) they were computed from: nothing is stored when the entry's text is
-- no longer that text (an edit in between stored its own). p_replace = false only fills
-- in missing tokens (the backfill), true replaces them (after an update, a re-tokenization).
-- Returns whether the row was changed.
--   psql> SELECT amrita_memory.knowledge_set_tokens_v1('0a1b2c3d', '标题', '摘要', '正文',
--           ARRAY['标题'], true);
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_set_tokens_v1(
    p_kid text, p_title text, p_summary text, p_body text, p_tokens text[], p_replace boolean)
RETURNS boolean
LANGUAGE sql VOLATILE
AS $$
    WITH changed AS (
        UPDATE amrita_memory.knowledge k
           SET search_tokens = array_to_tsvector(coalesce(p_tokens, '{}'))
         WHERE k.kid = p_kid
           AND k.title = p_title AND k.summary = p_summary AND k.body = p_body
           AND (p_replace OR k.search_tokens IS NULL)
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM changed)
$$;


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
$$;


COMMENT ON FUNCTION amrita_memory.knowledge_create_v2(text, text, text, text, vector, text, integer, timestamptz, text[], text, text, text) IS
'knowledge_create_v1 that also stores the search tokens of title + summary + body; status created | too_long | exists.';
COMMENT ON FUNCTION amrita_memory.knowledge_update_v2(text, text, text, text, integer, integer, vector, text, integer, timestamptz, text, text, text) IS
'knowledge_update_v1 that clears the search tokens of a changed text and returns the text after the update (the caller stores its tokens with knowledge_set_tokens_v1).';
COMMENT ON FUNCTION amrita_memory.knowledge_set_tokens_v1(text, text, text, text, text[], boolean) IS
'Store a knowledge entry''s search tokens unless its text changed since they were made; p_replace false = fill in missing tokens only. True when stored.';
COMMENT ON FUNCTION amrita_memory.knowledge_search_v2(vector, text[], text, integer, text, float8, float8) IS
'Knowledge search in one statement: mode vector (summary vector L2, = knowledge_search_v1''s order), keyword (BM25 over title + summary + body tokens) or hybrid (rrf or weighted fusion, as the memories''; no decay). SQLSTATE 22023 for a bad mode or fusion.';
