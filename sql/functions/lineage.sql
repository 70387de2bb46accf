-- Lineage, forgetting and erasure (docs/forgetting.md).
--
-- What is derived. The product writes rows made from other rows: the L3 loop merges and
-- rewrites memories, writes profile lines and the profile summary, distils knowledge
-- entries and rewrites the memo; extraction writes memories from a session's chat lines.
-- Each such write records, in its own transaction, one amrita_memory.lineage row per
-- source: (derived_kind, derived_key, derived_id) made from (source_kind, source_key,
-- source_id), by whom (made_by: the actor kind) and, for the loop, in which cycle.
--   derived_kind  memory          derived_key = partition, derived_id = memory id
--                 knowledge       derived_key = '' (global), derived_id = kid
--                 profile_line    derived_key = partition, derived_id = md5 of the line
--                 profile_summary derived_key = partition, derived_id = md5 of the summary
--                 memo_sentence   derived_key = partition, derived_id = md5 of the
--                                 sentence trimmed (memo_sentences_v1 splits a memo)
--   source_kind   memory          source_key = partition, source_id = memory id
--                 chat_line       source_key = chat_log.session_key, source_id = its id
-- A line, summary or sentence is named by its text's md5: it has no id of its own, and the
-- same text in the same profile or memo is the same derived row. A merge records the kept
-- memory as one of its own sources (a self-edge): its earlier content is a source that
-- outlives the memories merged into it.
--
-- Forgetting (forget_cascade_v1). Given sources that go, every row derived from them
-- (transitively) is found and handled by one rule:
--   * made from what goes alone (no other source of it still exists, no self-edge) ->
--     deleted, and what was made from it in turn is handled the same way;
--   * made from several -> withheld: taken out of use at once (a memory or knowledge
--     entry leaves its table, a profile line or memo sentence leaves its text) and queued
--     in amrita_memory.rederive_task for the partition's next L3 cycle, which writes it
--     again without what went (or drops it). What was made from a withheld row is
--     withheld too.
-- Modes: 'delete' (a memory deleted on a chat, command, CLI or page surface: the history
-- records it as usual), 'forget' (also every trace: the history's before-images of every
-- row touched, their access log and the searches that found them, the admin audit's
-- copies, the sweep's entries, profile history holding a removed line, the summaries and
-- undelivered messages of cycles that derived from it, the chat lines it was extracted
-- from, and memories merged into it earlier), 'erase' (a person: as forget, and the
-- withheld rows' task carries no content), 'change' (a person or the chat model changed a
-- memory's text: everything derived from it is withheld for re-derivation, nothing is
-- deleted). p_strict (a restore applying the ledger): every derived row is deleted, no
-- task; the loop derives again from what is left.
--
-- Erasure (erase_partition_v1) forgets every memory and chat line of a partition (and, for
-- a personal one, the person's chat lines in groups and group memories they authored),
-- then deletes the partition's rows in every table; amrita_memory.erasure_ledger keeps what
-- was erased and when, never content: the partition key's sha256 (erasure_subject_v1), the
-- forgotten memory and chat line ids (random hex / sequence numbers), counts per table.
-- Every restore applies the ledger after loading (erasure_ledger_apply_v1), so no backup
-- older than an erasure or a forget brings the data back.
--
-- Cost: a forget reads the lineage of the rows it touches (index on each direction) and a
-- few rows per derived row; an erasure is one partition (capped) plus the person's chat
-- lines. Neither touches the hot read or write paths: lineage is written only by derived
-- writes (the loop, extraction), never by a chat write.


-- md5 id of a profile line, summary or memo sentence: the text trimmed of blanks at both
-- ends (a memo sentence keeps its line break; the id does not).
--   psql> SELECT amrita_memory.text_id_v1('用户对花生过敏。');
CREATE OR REPLACE FUNCTION amrita_memory.text_id_v1(p_text text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT md5(btrim(p_text, E' \t\r\n'))
$$;
COMMENT ON FUNCTION amrita_memory.text_id_v1(text) IS
'Id of a derived profile line, summary or memo sentence in amrita_memory.lineage: md5 of the text trimmed of blanks (domain/lineage.py text_id is the same).';


-- A memo's sentences, in order, whose concatenation is the memo: each runs up to and
-- including its end mark (。！？!?, then any line breaks) or its line break(s), the last
-- up to the end. domain/lineage.py memo_sentences is the same rule (a test compares them).
--   psql> SELECT amrita_memory.memo_sentences_v1(E'喜欢猫。对花生过敏！\n周六爬山');
CREATE OR REPLACE FUNCTION amrita_memory.memo_sentences_v1(p_text text)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(m[1] ORDER BY n), '{}'::text[])
      FROM regexp_matches(p_text, E'([^。！？!?\\n]*(?:[。！？!?]+\\n*|\\n+|$))', 'g')
           WITH ORDINALITY AS r(m, n)
     WHERE m[1] <> ''
$$;
COMMENT ON FUNCTION amrita_memory.memo_sentences_v1(text) IS
'A memo split into sentences (each with its end mark and line breaks; their concatenation is the memo): the unit of memo lineage and of a memo sentence withheld by a forget.';


-- The subject of an erasure as the ledger records it: sha256 of the partition key (hex).
--   psql> SELECT amrita_memory.erasure_subject_v1('QQPlatform_Private_10001');
CREATE OR REPLACE FUNCTION amrita_memory.erasure_subject_v1(p_key text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT encode(sha256(convert_to(p_key, 'UTF8')), 'hex')
$$;
COMMENT ON FUNCTION amrita_memory.erasure_subject_v1(text) IS
'The erasure ledger''s name for a partition: sha256 of its key in hex (the key itself is not kept).';


-- The text a derived or source row holds now (NULL: it no longer exists): a memory's
-- content, a knowledge entry's title and summary, a profile line, the summary, a memo
-- sentence, a chat line.
--   psql> SELECT amrita_memory.lineage_text_v1('memory', 'QQPlatform_Private_10001', '<id>');
CREATE OR REPLACE FUNCTION amrita_memory.lineage_text_v1(p_kind text, p_key text, p_id text)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT CASE p_kind
        WHEN 'memory' THEN (SELECT m.content FROM amrita_memory.memory m
                             WHERE m.partition_key = p_key AND m.id = p_id)
        WHEN 'knowledge' THEN (SELECT k.title || ': ' || k.summary FROM amrita_memory.knowledge k
                                WHERE k.kid = p_id)
        WHEN 'profile_line' THEN (SELECT l FROM amrita_memory.profile p, unnest(p.lines) l
                                   WHERE p.partition_key = p_key
                                     AND amrita_memory.text_id_v1(l) = p_id LIMIT 1)
        WHEN 'profile_summary' THEN (SELECT p.summary FROM amrita_memory.profile p
                                      WHERE p.partition_key = p_key AND p.summary <> ''
                                        AND amrita_memory.text_id_v1(p.summary) = p_id)
        WHEN 'memo_sentence' THEN (SELECT s FROM amrita_memory.memo m,
                                          unnest(amrita_memory.memo_sentences_v1(m.content)) s
                                    WHERE m.partition_key = p_key
                                      AND amrita_memory.text_id_v1(s) = p_id LIMIT 1)
        WHEN 'chat_line' THEN (SELECT c.text FROM amrita_memory.chat_log c
                                WHERE c.session_key = p_key AND c.id::text = p_id)
    END
$$;
COMMENT ON FUNCTION amrita_memory.lineage_text_v1(text, text, text) IS
'The text a lineage row names now (memory content, knowledge title: summary, profile line or summary, memo sentence, chat line); NULL when the row no longer exists.';


-- What a row was made from, transitively (depth 1 = its own sources), with whether each
-- still exists. Self-edges (a merge's kept memory) are not followed.
--   psql> SELECT * FROM amrita_memory.lineage_made_from_v1('memory', 'QQPlatform_Private_10001', '<id>');
CREATE OR REPLACE FUNCTION amrita_memory.lineage_made_from_v1(p_kind text, p_key text, p_id text)
RETURNS TABLE (depth integer, kind text, row_key text, row_id text, made_by text,
               cycle_id bigint, made_at timestamptz, present boolean, body text)
LANGUAGE sql STABLE
AS $$
    WITH RECURSIVE up(depth, kind, row_key, row_id, made_by, cycle_id, made_at) AS (
        SELECT 1, l.source_kind, l.source_key, l.source_id, l.made_by, l.cycle_id, l.made_at
          FROM amrita_memory.lineage l
         WHERE l.derived_kind = p_kind AND l.derived_key = p_key AND l.derived_id = p_id
           AND (l.source_kind, l.source_key, l.source_id) IS DISTINCT FROM (p_kind, p_key, p_id)
        UNION
        SELECT up.depth + 1, l.source_kind, l.source_key, l.source_id, l.made_by, l.cycle_id,
               l.made_at
          FROM up
          JOIN amrita_memory.lineage l
            ON l.derived_kind = up.kind AND l.derived_key = up.row_key AND l.derived_id = up.row_id
         WHERE up.depth < 16
           AND (l.source_kind, l.source_key, l.source_id)
               IS DISTINCT FROM (l.derived_kind, l.derived_key, l.derived_id)
    ), firsts AS (
        SELECT DISTINCT ON (kind, row_key, row_id) *
          FROM up
         ORDER BY kind, row_key, row_id, depth
    )
    SELECT f.depth, f.kind, f.row_key, f.row_id, f.made_by, f.cycle_id, f.made_at,
           t.body IS NOT NULL, t.body
      FROM firsts f
      CROSS JOIN LATERAL (SELECT amrita_memory.lineage_text_v1(f.kind, f.row_key, f.row_id)) t(body)
     ORDER BY f.depth, f.made_at, f.kind, f.row_id
$$;
COMMENT ON FUNCTION amrita_memory.lineage_made_from_v1(text, text, text) IS
'What a derived row (memory, knowledge, profile_line, profile_summary, memo_sentence) was made from, transitively: depth, source, who made it, and whether the source still exists.';


-- What was made from a row, transitively (depth 1 = made from it directly), with whether
-- each still exists. Self-edges are not followed.
--   psql> SELECT * FROM amrita_memory.lineage_used_by_v1('memory', 'QQPlatform_Private_10001', '<id>');
CREATE OR REPLACE FUNCTION amrita_memory.lineage_used_by_v1(p_kind text, p_key text, p_id text)
RETURNS TABLE (depth integer, kind text, row_key text, row_id text, made_by text,
               cycle_id bigint, made_at timestamptz, present boolean, body text)
LANGUAGE sql STABLE
AS $$
    WITH RECURSIVE down(depth, kind, row_key, row_id, made_by, cycle_id, made_at) AS (
        SELECT 1, l.derived_kind, l.derived_key, l.derived_id, l.made_by, l.cycle_id, l.made_at
          FROM amrita_memory.lineage l
         WHERE l.source_kind = p_kind AND l.source_key = p_key AND l.source_id = p_id
           AND (l.derived_kind, l.derived_key, l.derived_id) IS DISTINCT FROM (p_kind, p_key, p_id)
        UNION
        SELECT down.depth + 1, l.derived_kind, l.derived_key, l.derived_id, l.made_by,
               l.cycle_id, l.made_at
          FROM down
          JOIN amrita_memory.lineage l
            ON l.source_kind = down.kind AND l.source_key = down.row_key
           AND l.source_id = down.row_id
         WHERE down.depth < 16
           AND (l.source_kind, l.source_key, l.source_id)
               IS DISTINCT FROM (l.derived_kind, l.derived_key, l.derived_id)
    ), firsts AS (
        SELECT DISTINCT ON (kind, row_key, row_id) *
          FROM down
         ORDER BY kind, row_key, row_id, depth
    )
    SELECT f.depth, f.kind, f.row_key, f.row_id, f.made_by, f.cycle_id, f.made_at,
           t.body IS NOT NULL, t.body
      FROM firsts f
      CROSS JOIN LATERAL (SELECT amrita_memory.lineage_text_v1(f.kind, f.row_key, f.row_id)) t(body)
     ORDER BY f.depth, f.made_at, f.kind, f.row_id
$$;
COMMENT ON FUNCTION amrita_memory.lineage_used_by_v1(text, text, text) IS
'What was derived from a row (a memory or chat line), transitively: depth, derived row, who made it, and whether it still exists.';


-- Whether any string value of a JSON document contains one of p_texts (the admin audit's
-- copies of a removed text).
CREATE OR REPLACE FUNCTION amrita_memory.json_mentions_v1(p_doc jsonb, p_texts text[])
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT EXISTS (
        SELECT 1
          FROM jsonb_path_query(coalesce(p_doc, '{}'::jsonb), 'strict $.**') v,
               unnest(p_texts) t
         WHERE jsonb_typeof(v) = 'string' AND char_length(t) >= 4 AND strpos(v #>> '{}', t) > 0)
$$;
COMMENT ON FUNCTION amrita_memory.json_mentions_v1(jsonb, text[]) IS
'Whether a string anywhere in a JSON document contains one of the texts: how a forget finds the admin audit''s copies of what it removes.';


-- The sweep's batch rows without the entries of memories p_ids (of partitions p_keys,
-- pairwise); a row left with no entry goes. Returns the entries removed.
CREATE OR REPLACE FUNCTION amrita_memory.sweep_change_forget_v1(p_keys text[], p_ids text[])
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_removed integer := 0;
    v_n integer;
BEGIN
    WITH hit AS (
        SELECT s.seq FROM amrita_memory.sweep_change s WHERE s.memory_ids && p_ids
    ), kept AS (
        SELECT s.seq,
               count(*) FILTER (WHERE NOT f.gone) AS left_over,
               count(*) FILTER (WHERE f.gone) AS removed,
               array_agg(u.pk ORDER BY u.n) FILTER (WHERE NOT f.gone) AS partition_keys,
               array_agg(u.mid ORDER BY u.n) FILTER (WHERE NOT f.gone) AS memory_ids,
               array_agg(u.op ORDER BY u.n) FILTER (WHERE NOT f.gone) AS ops,
               array_agg(u.content ORDER BY u.n) FILTER (WHERE NOT f.gone) AS contents,
               array_agg(u.tag ORDER BY u.n) FILTER (WHERE NOT f.gone) AS tags,
               array_agg(u.imp ORDER BY u.n) FILTER (WHERE NOT f.gone) AS importances,
               array_agg(u.cat ORDER BY u.n) FILTER (WHERE NOT f.gone) AS categories,
               array_agg(u.scope ORDER BY u.n) FILTER (WHERE NOT f.gone) AS scopes,
               array_agg(u.src ORDER BY u.n) FILTER (WHERE NOT f.gone) AS sources,
               array_agg(u.new_imp ORDER BY u.n) FILTER (WHERE NOT f.gone) AS new_importances,
               array_agg(u.new_src ORDER BY u.n) FILTER (WHERE NOT f.gone) AS new_sources
          FROM amrita_memory.sweep_change s
          JOIN hit h ON h.seq = s.seq
          CROSS JOIN LATERAL unnest(s.partition_keys, s.memory_ids, s.ops, s.contents, s.tags,
                                    s.importances, s.categories, s.scopes, s.sources,
                                    s.new_importances, s.new_sources)
                WITH ORDINALITY AS u(pk, mid, op, content, tag, imp, cat, scope, src, new_imp,
                                     new_src, n)
          CROSS JOIN LATERAL (
                SELECT EXISTS (SELECT 1 FROM unnest(p_keys, p_ids) g(k, i)
                                WHERE g.k = u.pk AND g.i = u.mid)) f(gone)
         GROUP BY s.seq
    ), dropped AS (
        DELETE FROM amrita_memory.sweep_change s USING kept k
         WHERE s.seq = k.seq AND k.left_over = 0
        RETURNING k.removed
    ), changed AS (
        UPDATE amrita_memory.sweep_change s
           SET partition_keys = k.partition_keys, memory_ids = k.memory_ids, ops = k.ops,
               contents = k.contents, tags = k.tags, importances = k.importances,
               categories = k.categories, scopes = k.scopes, sources = k.sources,
               new_importances = k.new_importances, new_sources = k.new_sources
          FROM kept k
         WHERE s.seq = k.seq AND k.left_over > 0 AND k.removed > 0
        RETURNING k.removed
    )
    SELECT coalesce((SELECT sum(removed) FROM dropped), 0)
         + coalesce((SELECT sum(removed) FROM changed), 0)
      INTO v_n;
    v_removed := v_n;
    RETURN v_removed;
END
$$;
COMMENT ON FUNCTION amrita_memory.sweep_change_forget_v1(text[], text[]) IS
'Removes the entries of the given memories (partition keys and ids, pairwise) from the sweep''s batch history rows; a batch row left empty is deleted. Returns the entries removed.';


-- The cascade of sources that go (p_sources: a JSON array of {"kind": "memory" |
-- "chat_line", "key": partition or session key, "id": memory id or chat line id}); the
-- modes and the rule are in this file's header. p_about: what the withheld rows' task
-- tells the loop ([{"was": old text, "now": new text or null}]); p_task_key: the partition
-- whose loop re-derives a withheld knowledge entry when no remaining source names one
-- (NULL: the first source's). p_dry_run: nothing written, the rows say what would be done.
-- Rows: one per row reached (action forget | ancestor | chat_line | delete | withhold),
-- its kind, key, id and text (cut to 200 characters), then one per table written
-- (action 'rows', kind = table, n = rows).
--   psql> SELECT * FROM amrita_memory.forget_cascade_v1(
--           '[{"kind":"memory","key":"QQPlatform_Private_10001","id":"<id>"}]', 'forget', false,
--           NULL, '[]', now(), true);   -- a dry run: what a forget of <id> would reach
CREATE OR REPLACE FUNCTION amrita_memory.forget_cascade_v1(
    p_sources jsonb, p_mode text, p_strict boolean, p_task_key text, p_about jsonb,
    p_now timestamptz, p_dry_run boolean)
RETURNS TABLE (action text, kind text, row_key text, row_id text, body text, n integer)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_traces boolean := p_mode IN ('forget', 'erase');
    v_changed integer;
    v_n integer;
    v_writer text;
    v_mem_keys text[];
    v_mem_ids text[];
    v_kids text[];
    v_texts text[];
    v_cycles bigint[];
    v_touched text[];
BEGIN
    IF p_mode NOT IN ('delete', 'forget', 'erase', 'change') THEN
        RAISE EXCEPTION 'forget_cascade_v1: unknown mode %', p_mode USING ERRCODE = '22023';
    END IF;
    -- The common case of a delete or a change: nothing was derived from the sources. One
    -- index probe and the sources' rows, no work table (a chat model's update or delete
    -- pays for nothing more).
    IF p_mode IN ('delete', 'change') AND NOT EXISTS (
            SELECT 1
              FROM jsonb_to_recordset(p_sources) AS s(kind text, key text, id text)
              JOIN amrita_memory.lineage l
                ON l.source_key = s.key AND l.source_kind = s.kind AND l.source_id = s.id)
    THEN
        RETURN QUERY
        SELECT CASE WHEN p_mode = 'change' THEN 'changed' ELSE 'forget' END, s.kind, s.key,
               s.id, left(amrita_memory.lineage_text_v1(s.kind, s.key, s.id), 200), NULL::integer
          FROM jsonb_to_recordset(p_sources) AS s(kind text, key text, id text);
        RETURN;
    END IF;
    CREATE TEMP TABLE IF NOT EXISTS pg_temp.forget_row (
        role text NOT NULL,          -- source | ancestor | derived
        kind text NOT NULL,
        row_key text NOT NULL,
        row_id text NOT NULL,
        present boolean NOT NULL,
        state text NOT NULL,         -- gone | held | kept (a changed source stays)
        body text,                   -- its text before anything was written
        PRIMARY KEY (kind, row_key, row_id)
    ) ON COMMIT DROP;
    TRUNCATE pg_temp.forget_row;

    -- 1. The sources.
    INSERT INTO pg_temp.forget_row
    SELECT DISTINCT ON (s.kind, s.key, s.id)
           'source', s.kind, s.key, s.id, t.body IS NOT NULL,
           CASE WHEN p_mode = 'change' THEN 'kept' ELSE 'gone' END, t.body
      FROM jsonb_to_recordset(p_sources) AS s(kind text, key text, id text)
      CROSS JOIN LATERAL (SELECT amrita_memory.lineage_text_v1(s.kind, s.key, s.id)) t(body)
     WHERE s.kind IN ('memory', 'chat_line') AND s.key IS NOT NULL AND s.id IS NOT NULL;

    -- 2. Forget and erase: what the sources were made from that says the same thing —
    -- memories merged or rewritten into them earlier (already deleted: their history
    -- still holds the text) and the chat lines they came from (which would teach it
    -- again). A source that still exists is another fact and stays.
    IF v_traces THEN
        INSERT INTO pg_temp.forget_row
        WITH RECURSIVE up(kind, row_key, row_id) AS (
            SELECT f.kind, f.row_key, f.row_id FROM pg_temp.forget_row f WHERE f.role = 'source'
            UNION
            SELECT l.source_kind, l.source_key, l.source_id
              FROM up
              JOIN amrita_memory.lineage l
                ON l.derived_kind = up.kind AND l.derived_key = up.row_key
               AND l.derived_id = up.row_id
             WHERE up.kind = 'memory'
               AND (EXISTS (SELECT 1 FROM pg_temp.forget_row f
                             WHERE f.role = 'source' AND f.kind = up.kind
                               AND f.row_key = up.row_key AND f.row_id = up.row_id)
                    OR NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                                    WHERE m.partition_key = up.row_key AND m.id = up.row_id))
        )
        SELECT 'ancestor', up.kind, up.row_key, up.row_id, t.body IS NOT NULL, 'gone', t.body
          FROM up
          CROSS JOIN LATERAL (SELECT amrita_memory.lineage_text_v1(up.kind, up.row_key, up.row_id)) t(body)
         WHERE (up.kind = 'memory' AND t.body IS NULL)
            OR (up.kind = 'chat_line' AND t.body IS NOT NULL)
        ON CONFLICT DO NOTHING;
    END IF;

    -- 3. Everything made from them, transitively.
    INSERT INTO pg_temp.forget_row
    WITH RECURSIVE down(kind, row_key, row_id) AS (
        SELECT l.derived_kind, l.derived_key, l.derived_id
          FROM pg_temp.forget_row f
          JOIN amrita_memory.lineage l
            ON l.source_kind = f.kind AND l.source_key = f.row_key AND l.source_id = f.row_id
        UNION
        SELECT l.derived_kind, l.derived_key, l.derived_id
          FROM down
          JOIN amrita_memory.lineage l
            ON l.source_kind = down.kind AND l.source_key = down.row_key
           AND l.source_id = down.row_id
    )
    SELECT 'derived', d.kind, d.row_key, d.row_id, t.body IS NOT NULL, 'gone', t.body
      FROM down d
      CROSS JOIN LATERAL (SELECT amrita_memory.lineage_text_v1(d.kind, d.row_key, d.row_id)) t(body)
    ON CONFLICT DO NOTHING;

    -- 4. The rule. Withheld: a derived row with a self-edge or a source that still exists
    -- outside this cascade, and what was made from a withheld row; every derived row
    -- when a source changed. Strict: nothing is withheld.
    IF p_mode = 'change' THEN
        UPDATE pg_temp.forget_row f SET state = 'held' WHERE f.role = 'derived' AND f.present;
    ELSIF NOT p_strict THEN
        UPDATE pg_temp.forget_row f
           SET state = 'held'
         WHERE f.role = 'derived' AND f.present
           AND EXISTS (
                SELECT 1 FROM amrita_memory.lineage l
                 WHERE l.derived_kind = f.kind AND l.derived_key = f.row_key
                   AND l.derived_id = f.row_id
                   AND ((l.source_kind, l.source_key, l.source_id) = (f.kind, f.row_key, f.row_id)
                        OR (NOT EXISTS (SELECT 1 FROM pg_temp.forget_row o
                                         WHERE o.kind = l.source_kind AND o.row_key = l.source_key
                                           AND o.row_id = l.source_id)
                            AND amrita_memory.lineage_text_v1(l.source_kind, l.source_key,
                                                              l.source_id) IS NOT NULL)));
        LOOP
            UPDATE pg_temp.forget_row f
               SET state = 'held'
             WHERE f.role = 'derived' AND f.present AND f.state = 'gone'
               AND EXISTS (
                    SELECT 1 FROM amrita_memory.lineage l
                      JOIN pg_temp.forget_row p
                        ON p.kind = l.source_kind AND p.row_key = l.source_key
                       AND p.row_id = l.source_id AND p.state = 'held'
                     WHERE l.derived_kind = f.kind AND l.derived_key = f.row_key
                       AND l.derived_id = f.row_id);
            GET DIAGNOSTICS v_changed = ROW_COUNT;
            EXIT WHEN v_changed = 0;
        END LOOP;
    END IF;

    -- What the rows reached say (the plan; also the result).
    RETURN QUERY
    SELECT CASE WHEN f.role = 'source' THEN CASE WHEN p_mode = 'change' THEN 'changed'
                                                  ELSE 'forget' END
                WHEN f.role = 'ancestor' AND f.kind = 'chat_line' THEN 'chat_line'
                WHEN f.role = 'ancestor' THEN 'ancestor'
                WHEN f.state = 'held' THEN 'withhold'
                ELSE 'delete' END,
           f.kind, f.row_key, f.row_id, left(f.body, 200), NULL::integer
      FROM pg_temp.forget_row f
     WHERE f.present OR f.role <> 'derived'
     ORDER BY CASE f.role WHEN 'source' THEN 0 WHEN 'ancestor' THEN 1 ELSE 2 END,
              f.kind, f.row_key, f.row_id;
    IF p_dry_run THEN
        RETURN;
    END IF;

    SELECT array_agg(f.row_key), array_agg(f.row_id)
      INTO v_mem_keys, v_mem_ids
      FROM pg_temp.forget_row f
     WHERE f.kind = 'memory' AND f.state IN ('gone', 'held');
    v_mem_keys := coalesce(v_mem_keys, '{}');
    v_mem_ids := coalesce(v_mem_ids, '{}');
    SELECT coalesce(array_agg(f.row_id), '{}') INTO v_kids
      FROM pg_temp.forget_row f WHERE f.kind = 'knowledge' AND f.state IN ('gone', 'held');
    SELECT coalesce(array_agg(DISTINCT f.body), '{}') INTO v_texts
      FROM pg_temp.forget_row f WHERE f.body IS NOT NULL AND f.state IN ('gone', 'held');
    SELECT coalesce(array_agg(DISTINCT l.cycle_id), '{}') INTO v_cycles
      FROM amrita_memory.lineage l
      JOIN pg_temp.forget_row f
        ON f.kind = l.derived_kind AND f.row_key = l.derived_key AND f.row_id = l.derived_id
     WHERE f.role = 'derived' AND l.cycle_id IS NOT NULL;
    SELECT coalesce(array_agg(DISTINCT f.row_key), '{}') INTO v_touched
      FROM pg_temp.forget_row f WHERE f.row_key <> '';

    -- 5. The withheld rows' tasks, before their rows go.
    IF NOT p_strict THEN
        INSERT INTO amrita_memory.rederive_task
               (partition_key, kind, row_key, row_id, held, sources, about, reason, created_at)
        SELECT coalesce(nullif(f.row_key, ''), src.first_key, p_task_key,
                        (SELECT s.row_key FROM pg_temp.forget_row s
                          WHERE s.role = 'source' ORDER BY s.row_key LIMIT 1)),
               f.kind, f.row_key, f.row_id,
               CASE WHEN p_mode = 'erase' THEN NULL
                    WHEN f.kind = 'memory' THEN (
                        SELECT jsonb_build_object('content', m.content, 'tags', m.tags,
                                                  'importance', m.importance,
                                                  'category', m.category, 'scope', m.scope,
                                                  'source', m.source, 'author', m.author,
                                                  'created_at', m.created_at)
                          FROM amrita_memory.memory m
                         WHERE m.partition_key = f.row_key AND m.id = f.row_id)
                    WHEN f.kind = 'knowledge' THEN (
                        SELECT jsonb_build_object('title', k.title, 'summary', k.summary,
                                                  'body', k.body)
                          FROM amrita_memory.knowledge k WHERE k.kid = f.row_id)
                    ELSE jsonb_build_object('text', f.body) END,
               coalesce(src.sources, '[]'::jsonb),
               CASE WHEN p_mode = 'erase' THEN '[]'::jsonb ELSE coalesce(p_about, '[]'::jsonb) END,
               p_mode, p_now
          FROM pg_temp.forget_row f
          CROSS JOIN LATERAL (
                SELECT jsonb_agg(jsonb_build_object('kind', l.source_kind, 'key', l.source_key,
                                                    'id', l.source_id)
                                 ORDER BY l.made_at, l.source_id) AS sources,
                       (array_agg(l.source_key ORDER BY l.made_at, l.source_id)
                            FILTER (WHERE l.source_kind = 'memory'))[1] AS first_key
                  FROM amrita_memory.lineage l
                 WHERE l.derived_kind = f.kind AND l.derived_key = f.row_key
                   AND l.derived_id = f.row_id
                   AND (l.source_kind, l.source_key, l.source_id) <> (f.kind, f.row_key, f.row_id)
                   AND NOT EXISTS (SELECT 1 FROM pg_temp.forget_row o
                                    WHERE o.kind = l.source_kind AND o.row_key = l.source_key
                                      AND o.row_id = l.source_id AND o.state <> 'kept')
                   AND amrita_memory.lineage_text_v1(l.source_kind, l.source_key, l.source_id)
                       IS NOT NULL) src
         WHERE f.state = 'held';
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n > 0 THEN
            RETURN QUERY SELECT 'rows', 'rederive_task', NULL::text, NULL::text, NULL::text, v_n;
        END IF;
    END IF;

    -- 6. The rows go. Forget and erase write their own (empty) history: the trail
    -- triggers would record every deleted memory's content as a before-image.
    IF v_traces THEN
        v_writer := current_setting('amrita_memory.history_by_writer', true);
        PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    END IF;
    DELETE FROM amrita_memory.memory m
     USING unnest(v_mem_keys, v_mem_ids) g(k, i)
     WHERE m.partition_key = g.k AND m.id = g.i;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'memory', NULL::text, NULL::text, NULL::text, v_n;
    END IF;
    IF v_traces THEN
        PERFORM set_config('amrita_memory.history_by_writer', coalesce(v_writer, ''), true);
    END IF;

    DELETE FROM amrita_memory.knowledge k WHERE k.kid = ANY (v_kids);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'knowledge', NULL::text, NULL::text, NULL::text, v_n;
    END IF;

    WITH gone AS (
        SELECT f.row_key, array_agg(f.row_id) FILTER (WHERE f.kind = 'profile_line') AS lines,
               array_agg(f.row_id) FILTER (WHERE f.kind = 'profile_summary') AS summaries,
               count(*) AS removed
          FROM pg_temp.forget_row f
         WHERE f.kind IN ('profile_line', 'profile_summary') AND f.state IN ('gone', 'held')
           AND f.present
         GROUP BY f.row_key
    ), before AS (
        -- the content before (a CTE reads the snapshot the UPDATE below starts from)
        SELECT p.partition_key, p.summary, p.lines, g.lines AS gone_lines,
               g.summaries AS gone_summaries, g.removed
          FROM amrita_memory.profile p JOIN gone g ON g.row_key = p.partition_key
    ), saved AS (
        UPDATE amrita_memory.profile p
           SET lines = ARRAY(SELECT l FROM unnest(p.lines) WITH ORDINALITY u(l, n)
                              WHERE amrita_memory.text_id_v1(l) <> ALL (coalesce(b.gone_lines, '{}'))
                              ORDER BY n),
               summary = CASE WHEN amrita_memory.text_id_v1(p.summary)
                                   = ANY (coalesce(b.gone_summaries, '{}'))
                              THEN '' ELSE p.summary END,
               version = p.version + 1,
               updated_at = p_now
          FROM before b
         WHERE p.partition_key = b.partition_key
        RETURNING p.partition_key, p.version, p.summary, p.lines
    ), recorded AS (
        -- a delete or change keeps the profile's history as any edit does; forget and
        -- erase record no copy (the old lines are what they remove)
        INSERT INTO amrita_memory.profile_history
               (partition_key, version, operation, actor_kind, actor, cycle_id,
                old_summary, old_lines, new_summary, new_lines, changed_at)
        SELECT s.partition_key, s.version,
               'withheld ' || b.removed || ' (made from a memory: ' || p_mode || ')',
               'system', p_mode, NULL, b.summary, b.lines, s.summary, s.lines, p_now
          FROM saved s JOIN before b ON b.partition_key = s.partition_key
         WHERE NOT v_traces
        RETURNING 1
    )
    SELECT count(*) INTO v_n FROM saved;
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'profile', NULL::text, NULL::text, NULL::text, v_n;
    END IF;

    WITH gone AS (
        SELECT f.row_key, array_agg(f.row_id) AS ids
          FROM pg_temp.forget_row f
         WHERE f.kind = 'memo_sentence' AND f.state IN ('gone', 'held') AND f.present
         GROUP BY f.row_key
    ), saved AS (
        UPDATE amrita_memory.memo m
           SET content = array_to_string(ARRAY(
                    SELECT s FROM unnest(amrita_memory.memo_sentences_v1(m.content))
                                  WITH ORDINALITY u(s, n)
                     WHERE amrita_memory.text_id_v1(s) <> ALL (g.ids)
                     ORDER BY n), ''),
               version = m.version + 1,
               updated_at = p_now
          FROM gone g
         WHERE m.partition_key = g.row_key
        RETURNING 1
    )
    SELECT count(*) INTO v_n FROM saved;
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'memo', NULL::text, NULL::text, NULL::text, v_n;
    END IF;

    IF v_traces THEN
        DELETE FROM amrita_memory.chat_log c
         USING pg_temp.forget_row f
         WHERE f.kind = 'chat_line' AND f.state = 'gone' AND f.present
           AND c.session_key = f.row_key AND c.id::text = f.row_id;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n > 0 THEN
            RETURN QUERY SELECT 'rows', 'chat_log', NULL::text, NULL::text, NULL::text, v_n;
        END IF;
    END IF;

    -- 7. Lineage: the rows reached are gone, withheld (their task names the sources left)
    -- or, when changed, keep what they were made from.
    DELETE FROM amrita_memory.lineage l
     USING pg_temp.forget_row f
     WHERE l.derived_kind = f.kind AND l.derived_key = f.row_key AND l.derived_id = f.row_id
       AND f.state IN ('gone', 'held');
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_traces THEN
        DELETE FROM amrita_memory.lineage l
         USING pg_temp.forget_row f
         WHERE l.source_kind = f.kind AND l.source_key = f.row_key AND l.source_id = f.row_id
           AND f.state = 'gone';
        GET DIAGNOSTICS v_changed = ROW_COUNT;
        v_n := v_n + v_changed;
    END IF;
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'lineage', NULL::text, NULL::text, NULL::text, v_n;
    END IF;

    IF NOT v_traces THEN
        RETURN;
    END IF;

    -- 8. Forget and erase: the traces. The memories' history (every row touched, the
    -- ancestors merged away before included), their recalls and the searches that found
    -- them, the sweep's entries.
    SELECT coalesce(array_agg(f.row_key), '{}'), coalesce(array_agg(f.row_id), '{}')
      INTO v_mem_keys, v_mem_ids
      FROM pg_temp.forget_row f
     WHERE f.kind = 'memory' AND f.state IN ('gone', 'held');
    -- the texts the history held for them (what the audit and profile history may copy)
    SELECT v_texts || coalesce(array_agg(DISTINCT x.t), '{}') INTO v_texts
      FROM (SELECT c.before->>'content' AS t
              FROM amrita_memory.memory_change c, unnest(v_mem_keys, v_mem_ids) g(k, i)
             WHERE c.partition_key = g.k AND c.memory_id = g.i
            UNION
            SELECT c.after->>'content'
              FROM amrita_memory.memory_change c, unnest(v_mem_keys, v_mem_ids) g(k, i)
             WHERE c.partition_key = g.k AND c.memory_id = g.i) x
     WHERE x.t IS NOT NULL;
    DELETE FROM amrita_memory.memory_change c
     USING unnest(v_mem_keys, v_mem_ids) g(k, i)
     WHERE c.partition_key = g.k AND c.memory_id = g.i;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'memory_change', NULL::text, NULL::text, NULL::text, v_n;
    END IF;
    v_n := amrita_memory.sweep_change_forget_v1(v_mem_keys, v_mem_ids);
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'sweep_change', NULL::text, NULL::text, NULL::text, v_n;
    END IF;
    UPDATE amrita_memory.memory_access a
       SET query = NULL
      FROM (SELECT DISTINCT x.partition_key, x.at, x.query
              FROM amrita_memory.memory_access x, unnest(v_mem_keys, v_mem_ids) g(k, i)
             WHERE x.partition_key = g.k AND x.memory_id = g.i AND x.query IS NOT NULL) s
     WHERE a.partition_key = s.partition_key AND a.at = s.at AND a.query = s.query;
    DELETE FROM amrita_memory.memory_access a
     USING unnest(v_mem_keys, v_mem_ids) g(k, i)
     WHERE a.partition_key = g.k AND a.memory_id = g.i;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'memory_access', NULL::text, NULL::text, NULL::text, v_n;
    END IF;
    DELETE FROM amrita_memory.reembed_staging r
     WHERE (r.kind = 'memory' AND r.row_id = ANY (v_mem_ids))
        OR (r.kind = 'knowledge' AND r.row_id = ANY (v_kids));

    -- The admin audit's copies: a page action on one of these rows, or any action whose
    -- detail quotes a removed text, keeps who and when but no content.
    UPDATE amrita_memory.admin_audit a
       SET detail = jsonb_build_object('erased', true)
     WHERE a.detail <> jsonb_build_object('erased', true)
       AND (a.target_id = ANY (v_mem_ids) OR a.target_id = ANY (v_kids)
            OR ((a.partition_key = ANY (v_touched) OR a.partition_key IS NULL)
                AND amrita_memory.json_mentions_v1(a.detail, v_texts)));
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'admin_audit', NULL::text, NULL::text, NULL::text, v_n;
    END IF;

    -- Profile history holding a removed line or summary: a revert must not bring it back.
    DELETE FROM amrita_memory.profile_history h
     WHERE h.partition_key = ANY (v_touched)
       AND (h.old_lines && v_texts OR h.new_lines && v_texts
            OR h.old_summary = ANY (v_texts) OR h.new_summary = ANY (v_texts));
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        RETURN QUERY SELECT 'rows', 'profile_history', NULL::text, NULL::text, NULL::text, v_n;
    END IF;

    -- The cycles that derived from them: their summaries (shown to later cycles) and the
    -- messages they wrote to the user.
    IF cardinality(v_cycles) > 0 THEN
        UPDATE amrita_memory.l3_state s
           SET last_summary = NULL
         WHERE s.last_summary IS NOT NULL
           AND s.target_key IN (SELECT c.target_key FROM amrita_memory.consolidation_cycle c
                                 WHERE c.id = ANY (v_cycles) AND c.summary = s.last_summary);
        UPDATE amrita_memory.consolidation_cycle c
           SET summary = NULL
         WHERE c.id = ANY (v_cycles) AND c.summary IS NOT NULL;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n > 0 THEN
            RETURN QUERY SELECT 'rows', 'consolidation_cycle', NULL::text, NULL::text, NULL::text, v_n;
        END IF;
        DELETE FROM amrita_memory.pending_message p WHERE p.cycle_id = ANY (v_cycles);
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n > 0 THEN
            RETURN QUERY SELECT 'rows', 'pending_message', NULL::text, NULL::text, NULL::text, v_n;
        END IF;
    END IF;
    RETURN;
END
$$;
COMMENT ON FUNCTION amrita_memory.forget_cascade_v1(jsonb, text, boolean, text, jsonb, timestamptz, boolean) IS
'The cascade of memories or chat lines that go (mode delete | forget | erase) or change (mode change): derived from them alone -> deleted, from several -> withheld into rederive_task for the loop; forget and erase also remove every trace (history, access log, audit copies, sweep entries, profile history, cycle summaries, source chat lines). Dry run: the plan only. See lineage.sql.';


-- Forget memories p_ids of partition p_key and everything derived from them (the cascade
-- in mode 'forget'), and record it in the ledger: the ids of the memories and chat lines
-- removed and the counts, no content. p_extra_lines: chat lines of the request itself
-- that say it (session key and id, pairwise), removed with it. p_by: who asked (a surface
-- and an operator name, never the subject). Dry run: the plan, nothing written.
--   psql> SELECT * FROM amrita_memory.forget_memories_v1('QQPlatform_Private_10001',
--           ARRAY['<id>'], '{}', '{}', 'cli:alice', now(), true);
CREATE OR REPLACE FUNCTION amrita_memory.forget_memories_v1(
    p_key text, p_ids text[], p_line_keys text[], p_line_ids bigint[], p_by text,
    p_now timestamptz, p_dry_run boolean)
RETURNS TABLE (action text, kind text, row_key text, row_id text, body text, n integer)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_sources jsonb;
    v_about jsonb;
    v_counts jsonb := '{}'::jsonb;
    v_memories text[] := '{}';
    v_lines bigint[] := '{}';
    r record;
BEGIN
    SELECT coalesce(jsonb_agg(jsonb_build_object('kind', 'memory', 'key', p_key, 'id', i)), '[]')
      INTO v_sources FROM unnest(p_ids) i;
    SELECT v_sources || coalesce(jsonb_agg(jsonb_build_object('kind', 'chat_line', 'key', k,
                                                              'id', i::text)), '[]')
      INTO v_sources FROM unnest(p_line_keys, p_line_ids) g(k, i);
    -- what the withheld rows' task must leave out: the text, from the row or, for a
    -- memory already gone (merged into another), from its history's last before-image
    SELECT coalesce(jsonb_agg(jsonb_build_object('was', t.content, 'now', NULL)), '[]')
      INTO v_about
      FROM unnest(p_ids) i(id)
      CROSS JOIN LATERAL (
            SELECT coalesce(
                (SELECT m.content FROM amrita_memory.memory m
                  WHERE m.partition_key = p_key AND m.id = i.id),
                (SELECT c.before->>'content' FROM amrita_memory.memory_change c
                  WHERE c.partition_key = p_key AND c.memory_id = i.id AND c.before IS NOT NULL
                  ORDER BY c.seq DESC LIMIT 1)) AS content) t
     WHERE t.content IS NOT NULL;
    FOR r IN
        SELECT * FROM amrita_memory.forget_cascade_v1(v_sources, 'forget', false, p_key,
                                                      v_about, p_now, p_dry_run)
    LOOP
        action := r.action; kind := r.kind; row_key := r.row_key; row_id := r.row_id;
        body := r.body; n := r.n;
        RETURN NEXT;
        IF r.action = 'rows' THEN
            v_counts := v_counts || jsonb_build_object(r.kind, r.n);
        ELSIF r.kind = 'memory' AND r.action IN ('forget', 'ancestor') THEN
            v_memories := v_memories || r.row_id;
        ELSIF r.kind = 'chat_line' THEN
            v_lines := v_lines || r.row_id::bigint;
        END IF;
    END LOOP;
    -- an id forgotten again (already gone) is still recorded: a restore may bring it back
    v_memories := ARRAY(SELECT DISTINCT x FROM unnest(v_memories || p_ids) x ORDER BY 1);
    IF NOT p_dry_run THEN
        INSERT INTO amrita_memory.erasure_ledger
               (at, kind, subject, memory_ids, chat_line_ids, requested_by, counts)
        VALUES (p_now, 'forget', amrita_memory.erasure_subject_v1(p_key), v_memories,
                ARRAY(SELECT DISTINCT x FROM unnest(v_lines) x ORDER BY 1), p_by, v_counts);
    END IF;
    RETURN;
END
$$;
COMMENT ON FUNCTION amrita_memory.forget_memories_v1(text, text[], text[], bigint[], text, timestamptz, boolean) IS
'Forget memories of a partition with their cascade and every trace (forget_cascade_v1, mode forget) and record the forget in erasure_ledger (ids and counts, no content). Dry run: the plan only.';


-- Erase partition p_key: every memory and chat line of it (for a personal partition also
-- the person's chat lines in other chats, the group memories they authored, their
-- recalls, suggestions, grants and activity) forgotten with their cascade, then the
-- partition's rows in every other table. p_record: write the ledger row (false when a
-- restore re-applies the ledger). Rows: the receipt, one per table written (action
-- 'rows', kind = table, n = rows; no content), the ledger id (action 'ledger'), and the id
-- of each memory that left the memory table (action 'memory': an external vector index
-- must drop it).
--   psql> SELECT * FROM amrita_memory.erase_partition_v1('QQPlatform_Private_10001',
--           'cli:alice', now(), true, true);   -- a dry run: what it would remove
CREATE OR REPLACE FUNCTION amrita_memory.erase_partition_v1(
    p_key text, p_by text, p_now timestamptz, p_dry_run boolean, p_record boolean)
RETURNS TABLE (action text, kind text, row_id text, n integer)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_user text := substring(p_key FROM '^[A-Za-z0-9]+_Private_(.+)$');
    v_sources jsonb;
    v_counts jsonb := '{}'::jsonb;
    v_memories text[] := '{}';
    v_n integer;
    v_ledger bigint;
    v_index text;
    v_plan jsonb := '[]'::jsonb;
    r record;
BEGIN
    IF p_key IS NULL OR p_key = '' THEN
        RAISE EXCEPTION 'erase_partition_v1: no partition key' USING ERRCODE = '22023';
    END IF;
    IF p_dry_run THEN
        -- The exact receipt an erasure would give, from the erasure itself in a
        -- subtransaction that is then rolled back (no estimate to drift from the real thing).
        BEGIN
            FOR r IN SELECT * FROM amrita_memory.erase_partition_v1(p_key, p_by, p_now, false, false)
            LOOP
                v_plan := v_plan || jsonb_build_object('action', r.action, 'kind', r.kind,
                                                       'row_id', r.row_id, 'n', r.n);
            END LOOP;
            RAISE EXCEPTION USING ERRCODE = 'AMD01', MESSAGE = 'erase_partition_v1: dry run';
        EXCEPTION WHEN SQLSTATE 'AMD01' THEN
            NULL;
        END;
        RETURN QUERY SELECT x.action, x.kind, x.row_id, x.n
                       FROM jsonb_to_recordset(v_plan) AS x(action text, kind text, row_id text, n integer);
        RETURN;
    END IF;
    SELECT coalesce(jsonb_agg(s), '[]') INTO v_sources FROM (
        SELECT jsonb_build_object('kind', 'memory', 'key', m.partition_key, 'id', m.id) AS s
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_key OR (v_user IS NOT NULL AND m.author = v_user)
        UNION ALL
        SELECT jsonb_build_object('kind', 'chat_line', 'key', c.session_key, 'id', c.id::text)
          FROM amrita_memory.chat_log c
         WHERE c.session_key = p_key OR (v_user IS NOT NULL AND c.user_id = v_user AND c.role = 'user')
    ) x;
    FOR r IN
        SELECT * FROM amrita_memory.forget_cascade_v1(v_sources, 'erase', false, NULL, '[]',
                                                      p_now, false)
    LOOP
        IF r.kind = 'memory' AND r.action IN ('forget', 'delete', 'withhold') THEN
            action := 'memory'; kind := 'memory'; row_id := r.row_id; n := NULL;
            RETURN NEXT;
        END IF;
        IF r.action = 'rows' THEN
            v_counts := v_counts || jsonb_build_object(r.kind, r.n);
        ELSIF r.kind = 'memory' AND r.action IN ('forget', 'ancestor') THEN
            v_memories := v_memories || r.row_id;
        END IF;
    END LOOP;

    -- The partition's rows that no cascade reaches: one statement per table, counted.
    PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    DELETE FROM amrita_memory.memo m WHERE m.partition_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object('memo', v_n);
    DELETE FROM amrita_memory.profile p WHERE p.partition_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object('profile', v_n);
    DELETE FROM amrita_memory.profile_history p WHERE p.partition_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object(
        'profile_history', coalesce((v_counts->>'profile_history')::integer, 0) + v_n);
    -- the history of memories deleted before (and their sweep entries)
    SELECT coalesce(array_agg(DISTINCT c.memory_id), '{}') INTO v_memories
      FROM (SELECT c.memory_id FROM amrita_memory.memory_change c WHERE c.partition_key = p_key
            UNION SELECT unnest(v_memories)) c;
    DELETE FROM amrita_memory.memory_change c WHERE c.partition_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object(
        'memory_change', coalesce((v_counts->>'memory_change')::integer, 0) + v_n);
    v_n := amrita_memory.sweep_change_forget_v1(
        array_fill(p_key, ARRAY[cardinality(v_memories)]), v_memories);
    v_counts := v_counts || jsonb_build_object(
        'sweep_change', coalesce((v_counts->>'sweep_change')::integer, 0) + v_n);
    DELETE FROM amrita_memory.memory_access a
     WHERE a.partition_key = p_key OR (v_user IS NOT NULL AND a.who = v_user);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object(
        'memory_access', coalesce((v_counts->>'memory_access')::integer, 0) + v_n);
    DELETE FROM amrita_memory.pending_message p WHERE p.target_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object(
        'pending_message', coalesce((v_counts->>'pending_message')::integer, 0) + v_n);
    DELETE FROM amrita_memory.consolidation_cycle c WHERE c.target_key = p_key;  -- token_usage follows
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object('consolidation_cycle', v_n);
    DELETE FROM amrita_memory.token_usage t WHERE t.target_key = p_key;
    DELETE FROM amrita_memory.l3_state s WHERE s.target_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object('l3_state', v_n);
    DELETE FROM amrita_memory.extraction_run e WHERE e.session_key = p_key OR e.partition_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object('extraction_run', v_n);
    DELETE FROM amrita_memory.chat_log c
     WHERE c.session_key = p_key OR (v_user IS NOT NULL AND c.user_id = v_user AND c.role = 'user');
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object(
        'chat_log', coalesce((v_counts->>'chat_log')::integer, 0) + v_n);
    DELETE FROM amrita_memory.activity_heatmap h WHERE h.user_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object('activity_heatmap', v_n);
    DELETE FROM amrita_memory.loaded_scope s
     WHERE s.chat_key = p_key OR s.scope_key = p_key OR (v_user IS NOT NULL AND s.loaded_by = v_user);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object('loaded_scope', v_n);
    DELETE FROM amrita_memory.paused_partition p WHERE p.partition_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object('paused_partition', v_n);
    DELETE FROM amrita_memory.rederive_task t WHERE t.partition_key = p_key OR t.row_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object(
        'rederive_task', coalesce((v_counts->>'rederive_task')::integer, 0) + v_n);
    DELETE FROM amrita_memory.lineage l WHERE l.derived_key = p_key OR l.source_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object(
        'lineage', coalesce((v_counts->>'lineage')::integer, 0) + v_n);
    IF v_user IS NOT NULL THEN
        DELETE FROM amrita_memory.knowledge_suggestion s WHERE s.author_id = v_user;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_counts := v_counts || jsonb_build_object('knowledge_suggestion', v_n);
        DELETE FROM amrita_memory.permission_grant g WHERE g.user_id = v_user;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_counts := v_counts || jsonb_build_object('permission_grant', v_n);
    END IF;
    -- A large partition's own indexes name its key in their predicate (maintenance/ann.py):
    -- they go with it (they would be rebuilt for a partition that grows again).
    FOR v_index IN
        SELECT a.index_name FROM amrita_memory.ann_index a WHERE a.partition_key = p_key
        UNION SELECT 'ix_memory_kw_' || left(md5(p_key), 24)
    LOOP
        EXECUTE format('DROP INDEX IF EXISTS amrita_memory.%I', v_index);
    END LOOP;
    DELETE FROM amrita_memory.ann_index a WHERE a.partition_key = p_key;
    UPDATE amrita_memory.admin_audit a
       SET detail = jsonb_build_object('erased', true), partition_key = NULL
     WHERE a.partition_key = p_key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_counts := v_counts || jsonb_build_object(
        'admin_audit', coalesce((v_counts->>'admin_audit')::integer, 0) + v_n);
    PERFORM set_config('amrita_memory.history_by_writer', '', true);

    v_counts := (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb)
                   FROM jsonb_each(v_counts) e WHERE (e.value)::text <> '0');
    IF p_record THEN
        INSERT INTO amrita_memory.erasure_ledger
               (at, kind, subject, memory_ids, chat_line_ids, requested_by, counts)
        VALUES (p_now, 'erase', amrita_memory.erasure_subject_v1(p_key), '{}', '{}', p_by,
                v_counts)
        RETURNING id INTO v_ledger;
        RETURN QUERY SELECT 'ledger', 'erasure_ledger', v_ledger::text, NULL::integer;
    END IF;
    RETURN QUERY SELECT 'rows', e.key, NULL::text, e.value::integer
                   FROM jsonb_each_text(v_counts) e ORDER BY e.key;
END
$$;
COMMENT ON FUNCTION amrita_memory.erase_partition_v1(text, text, timestamptz, boolean, boolean) IS
'Erase a partition (a person: also their chat lines elsewhere, authored group memories, recalls, suggestions, grants): every row in every table, the derived rows by forget_cascade_v1 (mode erase), the receipt as rows per table (no content), and an erasure_ledger row unless p_record is false.';


-- Apply the erasure ledger to what a restore loaded: every forget again (its memories,
-- chat lines and what the restored lineage says was derived from them, strictly: no task,
-- what was made from several is deleted too) and every erasure of a partition whose key's
-- sha256 matches. Idempotent. Rows: one per ledger entry that removed something (its id,
-- kind, rows removed).
--   psql> SELECT * FROM amrita_memory.erasure_ledger_apply_v1(now());
CREATE OR REPLACE FUNCTION amrita_memory.erasure_ledger_apply_v1(p_now timestamptz)
RETURNS TABLE (ledger_id bigint, kind text, removed integer)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    e record;
    r record;
    v_sources jsonb;
    v_total integer;
    v_key text;
BEGIN
    FOR e IN SELECT * FROM amrita_memory.erasure_ledger ORDER BY id LOOP
        v_total := 0;
        IF e.kind = 'forget' THEN
            -- a memory id names its partition wherever it still appears: its row, the
            -- lineage, the history
            SELECT coalesce(jsonb_agg(s), '[]') INTO v_sources FROM (
                SELECT DISTINCT jsonb_build_object('kind', 'memory', 'key', k.key, 'id', i.id) AS s
                  FROM unnest(e.memory_ids) i(id)
                  CROSS JOIN LATERAL (
                        SELECT m.partition_key FROM amrita_memory.memory m WHERE m.id = i.id
                        UNION SELECT l.source_key FROM amrita_memory.lineage l
                               WHERE l.source_kind = 'memory' AND l.source_id = i.id
                        UNION SELECT l.derived_key FROM amrita_memory.lineage l
                               WHERE l.derived_kind = 'memory' AND l.derived_id = i.id
                        UNION SELECT c.partition_key FROM amrita_memory.memory_change c
                               WHERE c.memory_id = i.id) k(key)
                 WHERE amrita_memory.erasure_subject_v1(k.key) = e.subject
                    OR EXISTS (SELECT 1 FROM amrita_memory.memory m
                                WHERE m.partition_key = k.key AND m.id = i.id)
                UNION ALL
                SELECT jsonb_build_object('kind', 'chat_line', 'key', c.session_key, 'id', c.id::text)
                  FROM amrita_memory.chat_log c WHERE c.id = ANY (e.chat_line_ids)
            ) x;
            IF v_sources <> '[]'::jsonb THEN
                FOR r IN SELECT * FROM amrita_memory.forget_cascade_v1(
                        v_sources, 'forget', true, NULL, '[]', p_now, false) LOOP
                    IF r.action = 'rows' THEN
                        v_total := v_total + r.n;
                    END IF;
                END LOOP;
            END IF;
        ELSE
            FOR v_key IN
                SELECT DISTINCT k FROM (
                    SELECT m.partition_key AS k FROM amrita_memory.memory m
                    UNION SELECT partition_key FROM amrita_memory.memo
                    UNION SELECT partition_key FROM amrita_memory.profile
                    UNION SELECT partition_key FROM amrita_memory.profile_history
                    UNION SELECT partition_key FROM amrita_memory.memory_change
                    UNION SELECT session_key FROM amrita_memory.chat_log
                    UNION SELECT split_part(session_key, '_', 1) || '_Private_' || user_id
                            FROM amrita_memory.chat_log
                    UNION SELECT user_key FROM amrita_memory.activity_heatmap
                    UNION SELECT target_key FROM amrita_memory.l3_state
                    UNION SELECT target_key FROM amrita_memory.consolidation_cycle
                    UNION SELECT target_key FROM amrita_memory.pending_message
                    UNION SELECT session_key FROM amrita_memory.extraction_run
                    UNION SELECT partition_key FROM amrita_memory.memory_access
                    UNION SELECT partition_key FROM amrita_memory.paused_partition
                    UNION SELECT partition_key FROM amrita_memory.admin_audit
                ) keys
                 WHERE amrita_memory.erasure_subject_v1(k) = e.subject
            LOOP
                FOR r IN SELECT * FROM amrita_memory.erase_partition_v1(
                        v_key, 'restore', p_now, false, false) LOOP
                    IF r.action = 'rows' THEN
                        v_total := v_total + r.n;
                    END IF;
                END LOOP;
            END LOOP;
        END IF;
        IF v_total > 0 THEN
            ledger_id := e.id; kind := e.kind; removed := v_total;
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION amrita_memory.erasure_ledger_apply_v1(timestamptz) IS
'Re-apply every erasure_ledger entry to the store (after a restore loaded a backup): forgotten memories and chat lines with what the lineage says was derived from them (strictly: deleted, no task), erased partitions found by their key''s sha256. Rows: entries that removed something.';
