-- sweep_v5.sql: the sweep keeps the history bounds once per run, not per changed memory
-- (migration 0042_sweep_bounds_per_pass, issue 24). Released files are never edited.
--
-- Why. Measured on 100k memories / 1,000 partitions (33,281 due; a lab that runs the
-- batches on a fresh copy after a CHECKPOINT, three rounds each): sweep_batch_v4 1.70-1.79 s,
-- the same without its bounds block 1.40-1.60 s, without any history 0.84-1.00 s. The
-- bounds cost one probe of memory_change's key per changed memory (is there a 21st
-- change?) in every batch, and the retention of deleted memories' history a range scan
-- per partition a batch purged from (about every partition, every batch) — for a bound
-- that a sweep can only pass by ONE row per memory per run (a memory is in one batch of a
-- run, and gets one history row there).
--
-- What. sweep_batch_v5 takes sweep_batch_v4's arguments and returns its columns: the same
-- rows demoted, purged and kept, the same history rows (update / delete, one per memory,
-- set-wise, the trigger kept out), the same AMZ01 refusal of an automatic actor on a
-- paused partition — and no bounds. trim_history_v1(keep, days) keeps them for the whole
-- table in two statements, and the sweep (storage/memory_bulk.py) calls it once at the
-- end of every run that changed something, with the configured [trail] bounds (v4 used
-- the defaults 20 / 30 whatever was configured: the sweep never told it):
--   * per memory the newest p_keep changes stay: the memories with more are found by one
--     walk of memory_change's primary key (GROUP BY partition_key, memory_id HAVING
--     count(*) > p_keep, in key order, no sort), and only they are cut, as before;
--   * the history of a memory deleted more than p_days ago goes (its delete row is older
--     than that and the memory has not come back), over the partial index of delete rows.
-- Between two batches of one run a memory the sweep changed may hold p_keep + 1 changes
-- for the rest of the run; a run that stops half-way (a crash) leaves them until the
-- next run's trim. The trigger paths (edits, deletes by people and tools) still keep the
-- bounds per statement (trail_v2.sql). trim_history_v1 is also an operator's tool:
--   psql> SELECT * FROM amrita_memory.trim_history_v1(20, 30);
-- v4 stays (the previous release calls it during a rolling upgrade).


CREATE OR REPLACE FUNCTION amrita_memory.sweep_batch_v5(
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
    ), history AS (
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        SELECT n.partition_key, n.id, now(), v_kind, v_actor_id,
               coalesce(v_op,
                        CASE WHEN n.old_content = n.content AND n.old_importance = n.importance
                                  AND n.old_category IS NOT DISTINCT FROM n.category
                                  AND n.old_scope = n.scope
                             THEN 'tag' ELSE 'update' END),
               amrita_memory.memory_fields_v2(n.old_content, n.old_tags, n.old_importance,
                                              n.old_category, n.old_scope, n.old_source),
               amrita_memory.memory_fields_v2(n.content, n.tags, n.importance, n.category,
                                              n.scope, n.source),
               v_note
          FROM demote n
         WHERE (n.old_content, n.old_tags, n.old_importance, n.old_category, n.old_scope)
               IS DISTINCT FROM (n.content, n.tags, n.importance, n.category, n.scope)
        UNION ALL
        SELECT o.partition_key, o.id, now(), v_kind, v_actor_id, coalesce(v_op, 'delete'),
               amrita_memory.memory_fields_v2(o.content, o.tags, o.importance, o.category,
                                              o.scope, o.source),
               NULL, v_note
          FROM purge o
        RETURNING partition_key, memory_id
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
           (SELECT array_agg(DISTINCT h.partition_key) FROM history h)
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
    -- The history bounds are not kept here: trim_history_v1 runs once per sweep run.

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

COMMENT ON FUNCTION amrita_memory.sweep_batch_v5(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text) IS
'sweep_batch_v4 (one batch in id order from the persisted cursor; demote or purge what outlived its tier, locking only those rows, SKIP LOCKED; their update / delete history rows in the same statement) without the per-memory history bounds: the sweep run keeps them once, set-wise, with trim_history_v1.';


-- Keep the trail's history bounds over the whole table (see above): per memory the newest
-- p_keep changes, and no history of a memory deleted more than p_days ago.
CREATE OR REPLACE FUNCTION amrita_memory.trim_history_v1(p_keep integer, p_days integer)
RETURNS TABLE (trimmed integer, expired integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_keep integer := greatest(p_keep, 1);
    v_key text;
    v_mid text;
    v_cut bigint;
    v_rows integer;
BEGIN
    trimmed := 0;
    FOR v_key, v_mid IN SELECT c.partition_key, c.memory_id
                          FROM amrita_memory.memory_change c
                         GROUP BY c.partition_key, c.memory_id
                        HAVING count(*) > v_keep
    LOOP
        SELECT c.seq INTO v_cut
          FROM amrita_memory.memory_change c
         WHERE c.partition_key = v_key AND c.memory_id = v_mid
         ORDER BY c.seq DESC
        OFFSET v_keep LIMIT 1;
        IF v_cut IS NOT NULL THEN
            DELETE FROM amrita_memory.memory_change h
             WHERE h.partition_key = v_key AND h.memory_id = v_mid AND h.seq <= v_cut;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            trimmed := trimmed + v_rows;
        END IF;
    END LOOP;

    DELETE FROM amrita_memory.memory_change h
     USING (SELECT DISTINCT d.partition_key, d.memory_id
              FROM amrita_memory.memory_change d
             WHERE d.after IS NULL
               AND d.at < now() - make_interval(days => p_days)) gone
     WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
       AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                        WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
    GET DIAGNOSTICS expired = ROW_COUNT;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION amrita_memory.trim_history_v1(integer, integer) IS
'The trail''s history bounds over the whole table: per memory the newest p_keep changes stay (trimmed = rows cut), and the history of memories deleted more than p_days ago goes (expired = rows removed). The sweep runs it once per run.';
