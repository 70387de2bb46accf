-- The global knowledge base (reference §10).
--
-- An entry is one row of amrita_memory.knowledge: kid (8 hex characters when made
-- here), title, summary, body, and the vector of the SUMMARY (what a search matches,
-- as in the reference). The body is one text; its LINES are derived, one numbering
-- for every function: knowledge_lines_v1(body) = the body split on '\n', and an empty
-- body has no lines (the reference counted it as 1 line in its index and 0 when read,
-- §15 B9). Line windows are 0-based with an exclusive end, like the tools'.
--
-- The configured knowledge_max_chars (p_max_chars; characters = Python's len()) is
-- checked by the write itself, so no surface can store more (the reference's tools
-- hard-coded 10000 instead, B8); the table's CHECKs are the ceilings (title 1..200
-- without a newline, summary ≤ 1000, body ≤ 100000). A refused write changes nothing
-- and says why in its status column; callers never parse error text. Every write of a
-- vector passes the store's model check (require_store_model_v1: SQLSTATE AMF01 /
-- AMF03), like the memories'; the first write of a store records its model (p_protocol,
-- p_model, p_base_url, optional). Time is an argument (p_now), never now().
--
-- Search is hybrid, vector + keyword over title + summary + body. The keyword side is the
-- memories' (search.sql): knowledge.search_tokens is a tsvector of tokens made in Python
-- (amrita_memory_pg/domain/tokens.py) from title || '\n' || summary || '\n' || body
-- (domain/knowledge.py knowledge_search_text), stored with array_to_tsvector (lexemes as
-- given, no parser, no locale), NULL = not tokenized yet (a row restored from a backup:
-- the backfill amrita_memory_pg/maintenance/tokens.py fills it in; meanwhile it is found
-- by the vector side only). knowledge.search_len (generated: length(search_tokens)) is the
-- token count BM25 normalises by, kept in the row so the average length needs no
-- de-TOASTing of every tsvector (a body may give 4,000 tokens). The vector side is the L2
-- distance (<->) of the SUMMARY's vector, exact scan (the table is small), rows of another
-- dimension than the query's never compared.
--
-- Scores, with the memories' BM25 (k1 = 1.2, b = 0.75, tf = 1, statistics over the
-- whole table) and the memories' fusion, WITHOUT the time decay (knowledge does not age):
--   vector:  similarity = 1/(1 + distance²) (similarity_v1 of the squared distance)
--   keyword: bm25, only entries sharing a token with the query; needs no query vector
--   hybrid:  rrf      = 1/(p_rrf_k + vector rank) + 1/(p_rrf_k + keyword rank)
--            weighted = (1 - p_weight) × similarity min-max-normalised over the entries
--                       (1 when their spread is under 1e-3) + p_weight × bm25 / max bm25
--            (an entry of another dimension may still match by keyword: no vector term)
-- SQLSTATE 22023 for an unknown p_mode or p_fusion, or vector/hybrid without p_query.
--
-- Writes: knowledge_create_v2 stores the tokens given with the text. A line-range update
-- makes the new body in SQL, so knowledge_update_v2 clears the tokens of a row whose
-- text changed and returns the new text: the caller tokenizes it and stores the tokens
-- (knowledge_set_tokens_v1) in the same transaction; if it does not, the backfill does.
-- knowledge_update_v2 calls knowledge_update_v1 for the edit itself.


-- The lines of a body: split on '\n'; '' has none.
--   psql> SELECT amrita_memory.knowledge_lines_v1(E'a\nb');   -- {a,b}
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_lines_v1(p_body text)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT CASE WHEN p_body = '' THEN '{}'::text[] ELSE string_to_array(p_body, E'\n') END
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_lines_v1(text) IS
'The lines of a knowledge body: split on newline; the empty body has none. The one numbering of read, list and update.';


-- Update an entry. NULL title / summary / body = keep. With p_start NULL the body (if
-- given) replaces the whole body; with p_start given, p_body replaces the lines
-- [p_start, p_end) (p_end NULL = to the end; p_start = p_end inserts; p_body '' deletes
-- the range). A new summary needs its new vector (p_embedding; NULL keeps the old one).
-- status: 'updated', 'not_found', 'too_long' (char_count = the would-be length),
-- 'range' (0 <= p_start <= p_end <= total_lines does not hold; total_lines = now),
-- 'needs_embedding' (the summary changed without a vector). Refusals change nothing.
--   psql> SELECT * FROM amrita_memory.knowledge_update_v1('0a1b2c3d', NULL, NULL, '改写的第二行',
--           1, 2, NULL, NULL, 10000, now());
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_update_v1(
    p_kid text, p_title text, p_summary text, p_body text, p_start integer, p_end integer,
    p_embedding vector, p_fingerprint text, p_max_chars integer, p_now timestamptz,
    p_protocol text DEFAULT NULL, p_model text DEFAULT NULL, p_base_url text DEFAULT NULL)
RETURNS TABLE (status text, kid text, total_lines integer, char_count integer)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_row amrita_memory.knowledge%ROWTYPE;
    v_lines text[];
    v_total integer;
    v_end integer;
    v_body text;
BEGIN
    SELECT * INTO v_row FROM amrita_memory.knowledge k WHERE k.kid = p_kid FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, p_kid, 0, 0;
        RETURN;
    END IF;
    v_lines := amrita_memory.knowledge_lines_v1(v_row.body);
    v_total := cardinality(v_lines);
    v_body := v_row.body;
    IF p_start IS NOT NULL THEN
        v_end := coalesce(p_end, v_total);
        IF p_start < 0 OR v_end < p_start OR v_end > v_total THEN
            RETURN QUERY SELECT 'range'::text, p_kid, v_total, char_length(v_row.body);
            RETURN;
        END IF;
        -- PostgreSQL arrays are 1-based: [1:s] = the s lines before the range,
        -- [e+1:total] = the lines after it (both empty when out of bounds).
        v_body := array_to_string(
            v_lines[1:p_start]
            || amrita_memory.knowledge_lines_v1(coalesce(p_body, ''))
            || v_lines[v_end + 1:v_total],
            E'\n');
    ELSIF p_body IS NOT NULL THEN
        v_body := p_body;
    END IF;
    IF char_length(v_body) > p_max_chars THEN
        RETURN QUERY SELECT 'too_long'::text, p_kid, v_total, char_length(v_body);
        RETURN;
    END IF;
    IF p_summary IS NOT NULL AND p_summary IS DISTINCT FROM v_row.summary AND p_embedding IS NULL THEN
        RETURN QUERY SELECT 'needs_embedding'::text, p_kid, v_total, char_length(v_row.body);
        RETURN;
    END IF;
    IF p_embedding IS NOT NULL THEN
        PERFORM amrita_memory.require_store_model_v1(
            p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    END IF;
    UPDATE amrita_memory.knowledge k
       SET title = coalesce(p_title, k.title),
           summary = coalesce(p_summary, k.summary),
           body = v_body,
           embedding = coalesce(p_embedding, k.embedding),
           embed_fingerprint = CASE WHEN p_embedding IS NULL THEN k.embed_fingerprint
                                    ELSE p_fingerprint END,
           updated_at = p_now
     WHERE k.kid = p_kid;
    RETURN QUERY SELECT 'updated'::text, p_kid,
                        cardinality(amrita_memory.knowledge_lines_v1(v_body)), char_length(v_body);
END
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_update_v1(text, text, text, text, integer, integer, vector, text, integer, timestamptz, text, text, text) IS
'Update a knowledge entry: NULL keeps a field; with p_start the body replaces lines [p_start, p_end); status updated | not_found | too_long | range | needs_embedding.';


-- Delete an entry; false when there was none.
--   psql> SELECT amrita_memory.knowledge_delete_v1('0a1b2c3d');
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_delete_v1(p_kid text)
RETURNS boolean
LANGUAGE sql VOLATILE
AS $$
    WITH gone AS (DELETE FROM amrita_memory.knowledge k WHERE k.kid = p_kid RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM gone)
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_delete_v1(text) IS
'Delete a knowledge entry; false when there was none.';


-- How many lines a body has, without splitting it: newlines + 1, and 0 for ''
-- (= cardinality(knowledge_lines_v1(body)); listing 5000 entries of 100 lines took
-- 0.5 s with the split, bench/bench_knowledge.py).
--   psql> SELECT amrita_memory.knowledge_line_count_v1(E'a\nb');   -- 2
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_line_count_v1(p_body text)
RETURNS integer
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT CASE WHEN p_body = '' THEN 0
                ELSE char_length(p_body) - char_length(replace(p_body, E'\n', '')) + 1 END
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_line_count_v1(text) IS
'The number of lines of a knowledge body without splitting it (= cardinality(knowledge_lines_v1(body))).';


-- Every entry, oldest first (the reference's index order), without bodies.
--   psql> SELECT kid, title, total_lines, char_count FROM amrita_memory.knowledge_list_v1();
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_list_v1()
RETURNS TABLE (kid text, title text, summary text, total_lines integer, char_count integer,
               created_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT k.kid, k.title, k.summary, amrita_memory.knowledge_line_count_v1(k.body),
           char_length(k.body), k.created_at, k.updated_at
      FROM amrita_memory.knowledge k
     ORDER BY k.created_at, k.kid
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_list_v1() IS
'Every knowledge entry, oldest first, with line and character counts (no bodies).';


-- A window of an entry's lines, clamped as the reference did: s = max(0, p_start)
-- (NULL = 0), e = total when p_end is NULL, else max(s, min(total, p_end)). A start
-- beyond the end gives range_start > total_lines and no lines (callers refuse it).
-- No row when the kid is unknown.
--   psql> SELECT * FROM amrita_memory.knowledge_read_v1('0a1b2c3d', 0, 20);
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_read_v1(
    p_kid text, p_start integer, p_end integer)
RETURNS TABLE (kid text, title text, summary text, body_lines text[], total_lines integer,
               range_start integer, range_end integer, created_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT w.kid, w.title, w.summary, w.lines[w.s + 1:w.e], w.total, w.s, w.e,
           w.created_at, w.updated_at
      FROM (SELECT x.*, greatest(x.s, least(x.total, coalesce(p_end, x.total))) AS e
              FROM (SELECT k.kid, k.title, k.summary, k.created_at, k.updated_at,
                           amrita_memory.knowledge_lines_v1(k.body) AS lines,
                           cardinality(amrita_memory.knowledge_lines_v1(k.body)) AS total,
                           greatest(0, coalesce(p_start, 0)) AS s
                      FROM amrita_memory.knowledge k
                     WHERE k.kid = p_kid) x) w
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_read_v1(text, integer, integer) IS
'A window [start, end) of a knowledge entry''s lines, clamped like the reference; no row for an unknown kid.';


-- Queue a suggestion. status: 'queued' (id = the new row), 'full', 'rate_limited',
-- 'unknown_kid' (an update of an entry that does not exist). pending = unhandled now.
--   psql> SELECT * FROM amrita_memory.knowledge_suggest_v1('create', NULL, '标题', '摘要', '正文',
--           '理由', '10001', 20, 5, 3600, now());
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_suggest_v1(
    p_action text, p_kid text, p_title text, p_summary text, p_body text, p_reason text,
    p_author_id text, p_max_pending integer, p_rate_limit integer, p_rate_window_seconds integer,
    p_now timestamptz)
RETURNS TABLE (status text, id bigint, pending integer)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_pending integer;
    v_recent integer;
    v_id bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('amrita_memory.knowledge_suggestion'));
    SELECT count(*) INTO v_pending
      FROM amrita_memory.knowledge_suggestion s WHERE s.status IN ('pending', 'claimed');
    IF p_rate_limit > 0 THEN
        SELECT count(*) INTO v_recent
          FROM amrita_memory.knowledge_suggestion s
         WHERE s.author_id = p_author_id
           AND s.created_at > p_now - make_interval(secs => p_rate_window_seconds);
        IF v_recent >= p_rate_limit THEN
            RETURN QUERY SELECT 'rate_limited'::text, NULL::bigint, v_pending;
            RETURN;
        END IF;
    END IF;
    IF p_action = 'update' AND NOT EXISTS (
           SELECT 1 FROM amrita_memory.knowledge k WHERE k.kid = p_kid) THEN
        RETURN QUERY SELECT 'unknown_kid'::text, NULL::bigint, v_pending;
        RETURN;
    END IF;
    IF v_pending >= p_max_pending THEN
        RETURN QUERY SELECT 'full'::text, NULL::bigint, v_pending;
        RETURN;
    END IF;
    INSERT INTO amrita_memory.knowledge_suggestion
           (action, kid, title, summary, body, reason, author_id, created_at)
    VALUES (p_action, CASE WHEN p_action = 'update' THEN p_kid END, p_title, p_summary, p_body,
            coalesce(p_reason, ''), p_author_id, p_now)
    RETURNING knowledge_suggestion.id INTO v_id;
    RETURN QUERY SELECT 'queued'::text, v_id, v_pending + 1;
END
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_suggest_v1(text, text, text, text, text, text, text, integer, integer, integer, timestamptz) IS
'Queue a knowledge suggestion unless the queue is full, the author is over the rate limit or the kid to update is unknown; status queued | full | rate_limited | unknown_kid.';


-- Claim every pending suggestion for cycle p_cycle_id and return all it holds, oldest
-- first. A claim older than p_stale_before belongs to a cycle that died without
-- completing or releasing (a crash): it is claimed again.
--   psql> SELECT id, title FROM amrita_memory.knowledge_claim_suggestions_v1(42, now(), now() - interval '1 hour');
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_claim_suggestions_v1(
    p_cycle_id bigint, p_now timestamptz, p_stale_before timestamptz)
RETURNS TABLE (id bigint, action text, kid text, title text, summary text, body text,
               reason text, author_id text, created_at timestamptz)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
BEGIN
    UPDATE amrita_memory.knowledge_suggestion s
       SET status = 'claimed', claimed_by_cycle = p_cycle_id, claimed_at = p_now
     WHERE s.id IN (SELECT t.id FROM amrita_memory.knowledge_suggestion t
                     WHERE t.status = 'pending'
                        OR (t.status = 'claimed' AND t.claimed_at < p_stale_before
                            AND t.claimed_by_cycle <> p_cycle_id)
                       FOR UPDATE SKIP LOCKED);
    RETURN QUERY
        SELECT s.id, s.action, s.kid, s.title, s.summary, s.body, s.reason, s.author_id, s.created_at
          FROM amrita_memory.knowledge_suggestion s
         WHERE s.status = 'claimed' AND s.claimed_by_cycle = p_cycle_id
         ORDER BY s.id;
END
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_claim_suggestions_v1(bigint, timestamptz, timestamptz) IS
'Claim the pending knowledge suggestions (and stale claims) for an L3 cycle; returns every suggestion the cycle holds.';


-- The cycle succeeded: its claimed suggestions are done. Done rows handled before
-- p_prune_before are deleted (they only served the rate limit). Returns how many were
-- marked done.
--   psql> SELECT amrita_memory.knowledge_complete_suggestions_v1(42, now(), now() - interval '1 day');
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_complete_suggestions_v1(
    p_cycle_id bigint, p_now timestamptz, p_prune_before timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_done integer;
BEGIN
    UPDATE amrita_memory.knowledge_suggestion s
       SET status = 'done', claimed_by_cycle = NULL, handled_at = p_now
     WHERE s.status = 'claimed' AND s.claimed_by_cycle = p_cycle_id;
    GET DIAGNOSTICS v_done = ROW_COUNT;
    DELETE FROM amrita_memory.knowledge_suggestion s
     WHERE s.status = 'done' AND s.handled_at < p_prune_before;
    RETURN v_done;
END
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_complete_suggestions_v1(bigint, timestamptz, timestamptz) IS
'A cycle succeeded: mark its claimed suggestions done and prune old done rows; returns how many were marked.';


-- The cycle failed or was aborted: its claimed suggestions are pending again.
--   psql> SELECT amrita_memory.knowledge_release_suggestions_v1(42);
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_release_suggestions_v1(p_cycle_id bigint)
RETURNS integer
LANGUAGE sql VOLATILE
AS $$
    WITH released AS (
        UPDATE amrita_memory.knowledge_suggestion s
           SET status = 'pending', claimed_by_cycle = NULL, claimed_at = NULL
         WHERE s.status = 'claimed' AND s.claimed_by_cycle = p_cycle_id
        RETURNING 1)
    SELECT count(*)::integer FROM released
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_release_suggestions_v1(bigint) IS
'A cycle failed: its claimed suggestions are pending again; returns how many.';


-- Create an entry with its search tokens (p_tokens; NULL = to be backfilled): status
-- created | too_long | exists; the model check AMF01/AMF03.
--   psql> SELECT * FROM amrita_memory.knowledge_create_v2('0a1b2c3d', '标题', '摘要', '正文',
--           (SELECT embedding::vector FROM amrita_memory.memory LIMIT 1), '<fingerprint>', 10000, now(),
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
COMMENT ON FUNCTION amrita_memory.knowledge_create_v2(text, text, text, text, vector, text, integer, timestamptz, text[], text, text, text) IS
'Create a knowledge entry with the search tokens of title + summary + body (NULL = to be backfilled); status created | too_long | exists; model check AMF01/AMF03.';


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
COMMENT ON FUNCTION amrita_memory.knowledge_update_v2(text, text, text, text, integer, integer, vector, text, integer, timestamptz, text, text, text) IS
'knowledge_update_v1 that clears the search tokens of a changed text and returns the text after the update (the caller stores its tokens with knowledge_set_tokens_v1).';


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
COMMENT ON FUNCTION amrita_memory.knowledge_set_tokens_v1(text, text, text, text, text[], boolean) IS
'Store a knowledge entry''s search tokens unless its text changed since they were made; p_replace false = fill in missing tokens only. True when stored.';


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
                    THEN k.embedding <-> (SELECT p_query::halfvec) END AS distance
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
                                * coalesce(CASE WHEN max(r.similarity) OVER () - min(r.similarity) OVER () > 1e-3
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
COMMENT ON FUNCTION amrita_memory.knowledge_search_v2(vector, text[], text, integer, text, float8, float8) IS
'Knowledge search in one statement: mode vector (the summary vector''s L2 distance, then kid), keyword (BM25 over title + summary + body tokens) or hybrid (rrf or weighted fusion, as the memories''; no decay). SQLSTATE 22023 for a bad mode or fusion.';
