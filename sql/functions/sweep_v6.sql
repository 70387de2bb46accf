-- sweep_v6.sql: the sweep records its changes as ONE row per batch (migration
-- 0052_sweep_batch_log, issue 24). Released files are never edited.
--
-- Why. The sweep of 100k memories / 1,000 partitions (33,281 due) ran 1.33-1.53x the
-- release-2 sweep (9f422fc, no history at all) in a lab that runs both on fresh copies in
-- one server (/tmp lab, 3 rounds): sweep_batch_v5 1.44-1.62 s, the same function without
-- its history rows 1.04-1.10 s, release 2's 1.06-1.09 s. The gap is the history row per
-- changed memory (~13 us each: heap, key, WAL, buffer churn), not its content: the same
-- rows without the jsonb cost 0.93x, one jsonb_agg row per batch 1.07x of v5 (the
-- per-element jsonb and its compression). One row of plain arrays per batch, stored
-- uncompressed: 1.03-1.05x of release 2, with a GIN index on its memory ids 1.02x.
--
-- What.
--   * sweep_batch_v6 takes sweep_batch_v5's arguments and returns its columns: the same
--     rows demoted, purged and kept, the same AMZ01 refusal of an automatic actor on a
--     paused partition. Its history is one amrita_memory.sweep_change row per batch that
--     changed something: element i of partition_keys / memory_ids / ops / contents / tags
--     (each the text of a text[]) / importances / categories / scopes / sources is one
--     memory as it was; new_importances[i] / new_sources[i] its importance and source
--     after (NULL: purged; a person's sweep makes an automatic memory theirs). The row
--     takes its seq from memory_change's sequence, so both order as one history.
--   * the view sweep_change_entry lists the batch rows' entries as memory_change rows
--     (before / after as memory_fields_v2 makes them), and memory_history_v1(partition,
--     memory, limit) is a memory's history, newest first: its memory_change rows and its
--     entries (found by the GIN index on memory_ids).
--       psql> SELECT * FROM amrita_memory.memory_history_v1('QQPlatform_Private_10001', '<id>', 20);
--   * trim_history_v2(keep, days) keeps trim_history_v1's bounds (per memory the newest
--     `keep` memory_change rows; the history of a memory deleted more than `days` ago
--     goes) and: a sweep_change row older than `days` goes, with the memory_change history
--     of every memory it purged that has not come back. The bound per memory counts
--     memory_change rows only: a memory's sweep entries stay their `days` beside its
--     newest `keep`. v1 walked every memory's rows each run (a sort of the whole table:
--     0.12 s of a 0.8 s sweep at 100k memories, on disk past work_mem); v2 walks only the
--     memories with rows newer than the last trim (sweep_state.trimmed_seq, the sequence's
--     last value when it ran) — since v6 the sweep adds none, and the paths that do (the
--     row triggers) keep the bound per statement themselves, so this is the safety net
--     for the previous release's sweep and for rows written while it ran. The whole
--     table again when it never ran, the bound got smaller, or the sequence moved back
--     (a restore).
-- v5 and trim_history_v1 stay (the previous release calls them during a rolling upgrade;
-- its per-memory rows read back through memory_history_v1 like any other change).


CREATE OR REPLACE FUNCTION amrita_memory.sweep_batch_v6(
    p_now timestamptz,
    p_short_days float8,
    p_long_days float8,
    p_batch integer,
    p_restart_clock boolean,
    p_protect_user boolean,
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
    -- the actor as current_actor_v1 reads it ('kind:id'; system when unset or unknown)
    v_actor text := coalesce(nullif(current_setting('amrita_memory.actor', true), ''), 'system');
    v_kind text := split_part(v_actor, ':', 1);
    v_actor_id text := nullif(substr(v_actor, length(split_part(v_actor, ':', 1)) + 2), '');
    v_op text := nullif(current_setting('amrita_memory.op', true), '');
    v_note text := nullif(current_setting('amrita_memory.note', true), '');
    v_parts text[];
    v_paused text;
BEGIN
    IF v_kind NOT IN ('person', 'llm', 'extraction', 'l3', 'import', 'system') THEN
        v_kind := 'system';
    END IF;
    IF v_op IS NOT NULL AND v_op NOT IN ('merge') THEN
        v_op := NULL;
    END IF;
    IF v_cursor IS NULL THEN
        -- The row lock also keeps two sweeps from working the same batch at once.
        SELECT s.cursor_id INTO v_cursor FROM amrita_memory.sweep_state s WHERE s.id = 1 FOR UPDATE;
        v_cursor := coalesce(v_cursor, '');
    END IF;

    IF NOT p_dry_run THEN
        PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    END IF;
    -- One statement: read the batch, lock and change what is due, record the history.
    WITH batch AS (
        SELECT m.partition_key, m.id,
               CASE WHEN p_protect_user AND m.source = 'user' THEN 'keep'
                    WHEN EXISTS (SELECT 1 FROM amrita_memory.paused_partition pp
                                  WHERE pp.partition_key = m.partition_key) THEN 'keep'
                    ELSE amrita_memory.sweep_action_v1(
                        m.importance,
                        amrita_memory.age_days_v1(
                            CASE WHEN p_restart_clock THEN m.tier_since ELSE m.created_at END, p_now),
                        p_short_days, p_long_days)
               END AS action
          FROM amrita_memory.memory m
         WHERE m.id > v_cursor AND (p_until IS NULL OR m.id <= p_until)
         ORDER BY m.id
         LIMIT p_batch
    ), due AS (
        -- only what changes is locked; the action again on the locked (newest) row
        SELECT m.partition_key, m.id, m.content, m.tags, m.importance, m.category, m.scope,
               m.source,
               CASE WHEN p_protect_user AND m.source = 'user' THEN 'keep'
                    WHEN EXISTS (SELECT 1 FROM amrita_memory.paused_partition pp
                                  WHERE pp.partition_key = m.partition_key) THEN 'keep'
                    ELSE amrita_memory.sweep_action_v1(
                        m.importance,
                        amrita_memory.age_days_v1(
                            CASE WHEN p_restart_clock THEN m.tier_since ELSE m.created_at END, p_now),
                        p_short_days, p_long_days)
               END AS action
          FROM batch b
          JOIN amrita_memory.memory m ON m.partition_key = b.partition_key AND m.id = b.id
         WHERE b.action <> 'keep' AND NOT p_dry_run
           FOR UPDATE OF m SKIP LOCKED
    ), demote AS (
        UPDATE amrita_memory.memory m
           SET importance = amrita_memory.demoted_importance_v1(d.importance),
               tier_since = CASE WHEN p_restart_clock THEN p_now ELSE m.tier_since END
          FROM due d
         WHERE m.partition_key = d.partition_key AND m.id = d.id AND d.action = 'demote'
        RETURNING m.partition_key, m.id,
                  d.content AS old_content, d.tags AS old_tags, d.importance AS old_importance,
                  d.category AS old_category, d.scope AS old_scope, d.source AS old_source,
                  m.content, m.tags, m.importance, m.category, m.scope, m.source
    ), purge AS (
        DELETE FROM amrita_memory.memory m
         USING due d
         WHERE m.partition_key = d.partition_key AND m.id = d.id AND d.action = 'purge'
        RETURNING m.partition_key, m.id, m.content, m.tags, m.importance, m.category, m.scope,
                  m.source
    ), changed AS (
        -- what each changed memory was; a demotion changes the importance only
        SELECT n.partition_key, n.id,
               coalesce(v_op,
                        CASE WHEN n.old_content = n.content AND n.old_importance = n.importance
                                  AND n.old_category IS NOT DISTINCT FROM n.category
                                  AND n.old_scope = n.scope
                             THEN 'tag' ELSE 'update' END) AS op,
               n.old_content AS content, n.old_tags AS tags, n.old_importance AS importance,
               n.old_category AS category, n.old_scope AS scope, n.old_source AS source,
               n.importance AS new_importance, n.source AS new_source
          FROM demote n
         WHERE (n.old_content, n.old_tags, n.old_importance, n.old_category, n.old_scope)
               IS DISTINCT FROM (n.content, n.tags, n.importance, n.category, n.scope)
        UNION ALL
        SELECT o.partition_key, o.id, coalesce(v_op, 'delete'), o.content, o.tags, o.importance,
               o.category, o.scope, o.source, NULL::smallint, NULL::text
          FROM purge o
    ), history AS (
        -- ONE row for the batch: its changes as parallel arrays (element i is one memory)
        INSERT INTO amrita_memory.sweep_change
               (seq, at, actor_kind, actor_id, note, partition_keys, memory_ids, ops, contents,
                tags, importances, categories, scopes, sources, new_importances, new_sources)
        SELECT nextval(pg_get_serial_sequence('amrita_memory.memory_change', 'seq')),
               now(), v_kind, v_actor_id, v_note,
               array_agg(c.partition_key), array_agg(c.id), array_agg(c.op), array_agg(c.content),
               array_agg(c.tags::text), array_agg(c.importance), array_agg(c.category),
               array_agg(c.scope), array_agg(c.source), array_agg(c.new_importance),
               array_agg(c.new_source)
          FROM changed c
        HAVING count(*) > 0
        RETURNING seq
    ), access AS (
        -- the access log follows its memory: gone with it
        DELETE FROM amrita_memory.memory_access a
         USING purge g
         WHERE a.partition_key = g.partition_key AND a.memory_id = g.id
    )
    SELECT (SELECT count(*)::integer FROM batch),
           (SELECT max(b.id) FROM batch b),
           CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'demote')
                ELSE (SELECT count(*)::integer FROM demote) END,
           CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT count(*)::integer FROM purge) END,
           CASE WHEN p_dry_run
                THEN (SELECT coalesce(array_agg(b.id ORDER BY b.id), '{}') FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT coalesce(array_agg(g.id ORDER BY g.id), '{}') FROM purge g) END,
           (SELECT array_agg(DISTINCT c.partition_key) FROM changed c
             WHERE EXISTS (SELECT 1 FROM history))
      INTO scanned, v_last, demoted, purged, purged_ids, v_parts;
    IF NOT p_dry_run THEN
        PERFORM set_config('amrita_memory.history_by_writer', '', true);
    END IF;

    IF v_parts IS NOT NULL AND v_kind IN ('llm', 'extraction', 'l3') THEN
        SELECT p.partition_key INTO v_paused
          FROM amrita_memory.paused_partition p
         WHERE p.partition_key = ANY (v_parts)
         LIMIT 1;
        IF v_paused IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'AMZ01',
                MESSAGE = 'the memory of ' || v_paused || ' is paused: automatic processes may not change it',
                HINT = 'resume it with `amrita-memory resume` or /memory resume';
        END IF;
    END IF;
    -- The history bounds are not kept here: trim_history_v2 runs once per sweep run.

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

COMMENT ON FUNCTION amrita_memory.sweep_batch_v6(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text) IS
'sweep_batch_v5 (one batch in id order from the persisted cursor; demote or purge what outlived its tier, locking only those rows, SKIP LOCKED) recording its changes as ONE sweep_change row per batch (parallel arrays, one element per memory) instead of a memory_change row per memory.';


-- The sweep's batch rows, one row per memory they changed, as memory_change rows read
-- (before / after as memory_fields_v2 makes them); memory_ids stays a column so that a
-- filter on it reaches the table's GIN index.
--   psql> SELECT memory_id, op, before->>'importance', after->>'importance'
--           FROM amrita_memory.sweep_change_entry WHERE memory_ids @> ARRAY['<id>'];
CREATE OR REPLACE VIEW amrita_memory.sweep_change_entry AS
SELECT u.partition_key, u.memory_id, s.seq, s.at, s.actor_kind, s.actor_id, u.op,
       amrita_memory.memory_fields_v2(u.content, u.tags::text[], u.importance, u.category,
                                      u.scope, u.source) AS before,
       CASE WHEN u.new_importance IS NOT NULL
            THEN amrita_memory.memory_fields_v2(u.content, u.tags::text[], u.new_importance,
                                                u.category, u.scope, u.new_source) END AS after,
       s.note, s.memory_ids
  FROM amrita_memory.sweep_change s
 CROSS JOIN LATERAL unnest(s.partition_keys, s.memory_ids, s.ops, s.contents, s.tags,
                           s.importances, s.categories, s.scopes, s.sources, s.new_importances,
                           s.new_sources)
       AS u(partition_key, memory_id, op, content, tags, importance, category, scope, source,
            new_importance, new_source);
COMMENT ON VIEW amrita_memory.sweep_change_entry IS
'The sweep''s batch rows (sweep_change), one row per memory changed, as memory_change rows (before / after jsonb); filter on memory_ids to use the GIN index.';


-- A memory's history, newest first: its own rows and its entries in the sweep's batch rows.
CREATE OR REPLACE FUNCTION amrita_memory.memory_history_v1(
    p_partition text, p_memory text, p_limit integer)
RETURNS TABLE (
    partition_key text,
    memory_id text,
    seq bigint,
    at timestamptz,
    actor_kind text,
    actor_id text,
    op text,
    before jsonb,
    after jsonb,
    note text)
LANGUAGE sql STABLE
-- The planner does not count detoasting: a batch row's arrays live in TOAST, so a
-- sequential scan of sweep_change looks cheap and reads every batch's memory_ids (17 ms
-- at 300 batch rows of 2,000 memories; over the GIN index 1.4 ms).
SET enable_seqscan = off
AS $$
    SELECT h.partition_key, h.memory_id, h.seq, h.at, h.actor_kind, h.actor_id, h.op,
           h.before, h.after, h.note
      FROM (
            SELECT c.partition_key, c.memory_id, c.seq, c.at, c.actor_kind, c.actor_id, c.op,
                   c.before, c.after, c.note
              FROM amrita_memory.memory_change c
             WHERE c.partition_key = p_partition AND c.memory_id = p_memory
            UNION ALL
            SELECT e.partition_key, e.memory_id, e.seq, e.at, e.actor_kind, e.actor_id, e.op,
                   e.before, e.after, e.note
              FROM amrita_memory.sweep_change_entry e
             WHERE e.memory_ids @> ARRAY[p_memory]
               AND e.partition_key = p_partition AND e.memory_id = p_memory
           ) h
     ORDER BY h.seq DESC
     LIMIT p_limit
$$;
COMMENT ON FUNCTION amrita_memory.memory_history_v1(text, text, integer) IS
'A memory''s history, newest first (at most p_limit changes): its memory_change rows and its entries in the sweep''s batch rows (sweep_change_entry, over the GIN index on memory_ids), as memory_change rows.';


-- The trail's bounds (trim_history_v1's) and the sweep's batch rows, walking only the
-- memories with history rows newer than the last trim.
CREATE OR REPLACE FUNCTION amrita_memory.trim_history_v2(p_keep integer, p_days integer)
RETURNS TABLE (trimmed integer, expired integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_keep integer := greatest(p_keep, 1);
    v_seq regclass := pg_get_serial_sequence('amrita_memory.memory_change', 'seq')::regclass;
    v_top bigint := coalesce(pg_sequence_last_value(v_seq), 0);
    v_from bigint;
    v_keep_before integer;
    v_rows integer;
BEGIN
    -- the watermark: one trim at a time (the row lock), the next one starts past it
    SELECT s.trimmed_seq, s.trimmed_keep INTO v_from, v_keep_before
      FROM amrita_memory.sweep_state s WHERE s.id = 1 FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO amrita_memory.sweep_state (id) VALUES (1) ON CONFLICT (id) DO NOTHING;
        v_from := 0;
    END IF;
    IF v_keep_before IS NULL OR v_keep < v_keep_before OR v_top < v_from THEN
        -- never trimmed, a smaller bound than last time, or the sequence moved back (a
        -- restore): the whole table, as trim_history_v1 walks it
        SELECT t.trimmed, t.expired INTO trimmed, expired
          FROM amrita_memory.trim_history_v1(v_keep, p_days) t;
    ELSE
        -- only the memories changed since: the newest v_keep rows of each stay
        WITH touched AS (
            SELECT DISTINCT c.partition_key, c.memory_id
              FROM amrita_memory.memory_change c
             WHERE c.seq > v_from
        ), cut AS (
            SELECT t.partition_key, t.memory_id,
                   (SELECT c.seq FROM amrita_memory.memory_change c
                     WHERE c.partition_key = t.partition_key AND c.memory_id = t.memory_id
                     ORDER BY c.seq DESC OFFSET v_keep LIMIT 1) AS seq
              FROM touched t
        ), gone AS (
            DELETE FROM amrita_memory.memory_change h
             USING cut
             WHERE cut.seq IS NOT NULL
               AND h.partition_key = cut.partition_key AND h.memory_id = cut.memory_id
               AND h.seq <= cut.seq
            RETURNING 1
        )
        SELECT count(*)::integer INTO trimmed FROM gone;
        -- the history of memories deleted more than p_days ago (trim_history_v1's)
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT d.partition_key, d.memory_id
                  FROM amrita_memory.memory_change d
                 WHERE d.after IS NULL
                   AND d.at < now() - make_interval(days => p_days)) gone
         WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
        GET DIAGNOSTICS expired = ROW_COUNT;
    END IF;

    -- the batch rows past the retention, and the earlier history of what they purged
    -- (a memory purged more than p_days ago that has not come back)
    WITH old AS (
        DELETE FROM amrita_memory.sweep_change s
         WHERE s.at < now() - make_interval(days => p_days)
        RETURNING s.partition_keys, s.memory_ids, s.new_importances
    ), entries AS (
        SELECT u.partition_key, u.memory_id, u.new_importance
          FROM old o
         CROSS JOIN LATERAL unnest(o.partition_keys, o.memory_ids, o.new_importances)
               AS u(partition_key, memory_id, new_importance)
    ), gone AS (
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT e.partition_key, e.memory_id FROM entries e
                 WHERE e.new_importance IS NULL) g
         WHERE h.partition_key = g.partition_key AND h.memory_id = g.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = g.partition_key AND m.id = g.memory_id)
        RETURNING 1
    )
    SELECT (SELECT count(*)::integer FROM entries) + (SELECT count(*)::integer FROM gone)
      INTO v_rows;
    expired := expired + v_rows;

    UPDATE amrita_memory.sweep_state s
       SET trimmed_seq = v_top, trimmed_keep = v_keep
     WHERE s.id = 1;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION amrita_memory.trim_history_v2(integer, integer) IS
'trim_history_v1''s bounds (per memory the newest p_keep memory_change rows; no history of a memory deleted more than p_days ago) walking only the memories with rows past the last trim''s watermark (sweep_state.trimmed_seq; the whole table when never trimmed, the bound got smaller or the sequence moved back), and the sweep''s batch rows older than p_days with the earlier history of the memories they purged (expired counts their entries and those rows). The sweep runs it once per run.';
