-- The global knowledge base (reference §10), version 1. Released files are never
-- edited: a change is a new file (knowledge_v2.sql) installed by a new migration.
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

-- The lines of a body: split on '\n'; '' has none.
--   psql> SELECT amrita_memory.knowledge_lines_v1(E'a\nb');   -- {a,b}
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_lines_v1(p_body text)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT CASE WHEN p_body = '' THEN '{}'::text[] ELSE string_to_array(p_body, E'\n') END
$$;

-- Create an entry. status: 'created', 'too_long' (char_count = the refused body's
-- length), 'exists' (the kid is taken; nothing changed).
--   psql> SELECT * FROM amrita_memory.knowledge_create_v1('0a1b2c3d', '标题', '摘要', E'第一行\n第二行',
--           (SELECT embedding FROM amrita_memory.memory LIMIT 1), '<fingerprint>', 10000, now());
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_create_v1(
    p_kid text, p_title text, p_summary text, p_body text,
    p_embedding vector, p_fingerprint text, p_max_chars integer, p_now timestamptz,
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
           (kid, title, summary, body, embedding, embed_fingerprint, created_at, updated_at)
    VALUES (p_kid, p_title, p_summary, p_body, p_embedding, p_fingerprint, p_now, p_now)
    ON CONFLICT (kid) DO NOTHING;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'exists'::text, p_kid, 0, 0;
        RETURN;
    END IF;
    RETURN QUERY SELECT 'created'::text, p_kid,
                        cardinality(amrita_memory.knowledge_lines_v1(p_body)), char_length(p_body);
END
$$;

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

-- Delete an entry; false when there was none.
--   psql> SELECT amrita_memory.knowledge_delete_v1('0a1b2c3d');
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_delete_v1(p_kid text)
RETURNS boolean
LANGUAGE sql VOLATILE
AS $$
    WITH gone AS (DELETE FROM amrita_memory.knowledge k WHERE k.kid = p_kid RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM gone)
$$;

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

-- Semantic search: the p_top_k entries whose summary vector is nearest to p_query
-- (L2 distance, as the memories' search), by an exact scan (the table is small).
-- Vectors of another dimension than the query's are skipped, never compared.
--   psql> SELECT * FROM amrita_memory.knowledge_search_v1(
--           (SELECT embedding FROM amrita_memory.knowledge WHERE kid = '0a1b2c3d'), 5);
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_search_v1(p_query vector, p_top_k integer)
RETURNS TABLE (kid text, title text, summary text, distance double precision)
LANGUAGE sql STABLE
AS $$
    SELECT k.kid, k.title, k.summary, k.embedding <-> p_query
      FROM amrita_memory.knowledge k
     WHERE vector_dims(k.embedding) = vector_dims(p_query)
     ORDER BY k.embedding <-> p_query, k.kid
     LIMIT greatest(p_top_k, 0)
$$;

-- The re-embed's knowledge rows, embedding the SUMMARY (supersedes
-- reembed_pending_knowledge_v1 of reembed_v1.sql, which embedded title + summary while
-- nothing wrote knowledge: a re-embed must compute the same text as a write).
CREATE OR REPLACE FUNCTION amrita_memory.reembed_pending_knowledge_v2(
    p_fingerprint text, p_after text, p_limit integer)
RETURNS TABLE (row_id text, body text, updated_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT k.kid, k.summary, k.updated_at
      FROM amrita_memory.knowledge k
     WHERE k.kid > p_after
       AND NOT EXISTS (
             SELECT 1 FROM amrita_memory.reembed_staging s
              WHERE s.kind = 'knowledge' AND s.row_id = k.kid
                AND s.fingerprint = p_fingerprint AND s.source_updated_at = k.updated_at)
     ORDER BY k.kid
     LIMIT p_limit
$$;

-- ------------------------------------------------------------------ suggestions
-- Chat users propose entries (knowledge_suggest); an L3 cycle CLAIMS the pending ones
-- (claimed_by_cycle), and they are marked done only when that cycle succeeds
-- (complete), or go back to pending when it fails (release): an aborted cycle loses
-- nothing (the reference drained its queue first, §15 W15). The queue is bounded:
-- when p_max_pending suggestions are unhandled (pending or claimed), a NEW one is
-- refused with 'full' (nothing already queued is dropped). Each author may make
-- p_rate_limit suggestions per p_rate_window_seconds (counted from the rows
-- themselves, so the limit survives restarts; 0 = no limit). One advisory lock
-- serialises suggesters, so neither bound can be overshot by concurrent calls.

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

COMMENT ON FUNCTION amrita_memory.knowledge_lines_v1(text) IS
'The lines of a knowledge body: split on newline; the empty body has none. The one numbering of read, list and update.';
COMMENT ON FUNCTION amrita_memory.knowledge_line_count_v1(text) IS
'The number of lines of a knowledge body without splitting it (= cardinality(knowledge_lines_v1(body))).';
COMMENT ON FUNCTION amrita_memory.knowledge_create_v1(text, text, text, text, vector, text, integer, timestamptz, text, text, text) IS
'Create a knowledge entry (vector = the summary''s) unless its body exceeds p_max_chars; status created | too_long | exists.';
COMMENT ON FUNCTION amrita_memory.knowledge_update_v1(text, text, text, text, integer, integer, vector, text, integer, timestamptz, text, text, text) IS
'Update a knowledge entry: NULL keeps a field; with p_start the body replaces lines [p_start, p_end); status updated | not_found | too_long | range | needs_embedding.';
COMMENT ON FUNCTION amrita_memory.knowledge_delete_v1(text) IS
'Delete a knowledge entry; false when there was none.';
COMMENT ON FUNCTION amrita_memory.knowledge_list_v1() IS
'Every knowledge entry, oldest first, with line and character counts (no bodies).';
COMMENT ON FUNCTION amrita_memory.knowledge_read_v1(text, integer, integer) IS
'A window [start, end) of a knowledge entry''s lines, clamped like the reference; no row for an unknown kid.';
COMMENT ON FUNCTION amrita_memory.knowledge_search_v1(vector, integer) IS
'The top-k knowledge entries by L2 distance of their summary vector to the query (exact scan, same dimension only).';
COMMENT ON FUNCTION amrita_memory.reembed_pending_knowledge_v2(text, text, integer) IS
'Knowledge rows still to re-embed, with their summary (the text a write embeds); supersedes reembed_pending_knowledge_v1.';
COMMENT ON FUNCTION amrita_memory.knowledge_suggest_v1(text, text, text, text, text, text, text, integer, integer, integer, timestamptz) IS
'Queue a knowledge suggestion unless the queue is full, the author is over the rate limit or the kid to update is unknown; status queued | full | rate_limited | unknown_kid.';
COMMENT ON FUNCTION amrita_memory.knowledge_claim_suggestions_v1(bigint, timestamptz, timestamptz) IS
'Claim the pending knowledge suggestions (and stale claims) for an L3 cycle; returns every suggestion the cycle holds.';
COMMENT ON FUNCTION amrita_memory.knowledge_complete_suggestions_v1(bigint, timestamptz, timestamptz) IS
'A cycle succeeded: mark its claimed suggestions done and prune old done rows; returns how many were marked.';
COMMENT ON FUNCTION amrita_memory.knowledge_release_suggestions_v1(bigint) IS
'A cycle failed: its claimed suggestions are pending again; returns how many.';
