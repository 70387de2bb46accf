-- sweep_v4.sql: the sweep records its own history, set-wise, and locks only what it changes
-- (migration 0030_write_fast, issue 24). Released files are never edited.
--
-- Why. Measured on 100k memories / 1,000 partitions (a third due): sweep_batch_v3 took
-- 2.4x release 2's time. (1) Every demotion and purge ran through the trail's statement
-- triggers, whose history insert called memory_fields_v1 per row through the SQL-function
-- executor (~100 us per changed memory in-server). (2) Like every release before it, a
-- batch took FOR UPDATE locks on ALL its rows, kept ones included: a row lock writes the
-- tuple, so each batch dirtied (and after a checkpoint, logged a full-page image of) nearly
-- every page it read, two thirds of them for rows it then left alone.
--
-- What. sweep_batch_v4 takes sweep_batch_v3's arguments and returns its columns; the same
-- rows are demoted, purged and kept, with the same cursor:
--   * The batch (the next p_batch rows in id order after the cursor) is read without
--     locks, and the action decided per row as in v3 (source = user kept under
--     p_protect_user, a paused partition kept, else sweep_action_v1 of its age).
--   * Only the rows due for a demotion or a purge are then locked, FOR UPDATE SKIP
--     LOCKED, and their action decided again on the locked row (an edit committed
--     meanwhile counts): a row locked by a concurrent edit is skipped, not waited for,
--     and comes round on the next pass, as before. Such a row counts as kept (v3 did
--     not count it as scanned): scanned is the rows visited.
--   * Each demotion is a history row 'update' and each purge a 'delete' (one per memory,
--     by the transaction's actor, normally system), written by the same statement from
--     the rows it changed — the rows record_memory_change_v2 writes — with the trail
--     trigger kept out (amrita_memory.history_by_writer, trail_v3.sql). Then, as the
--     trigger does: the access log of purged memories goes; an automatic actor on a
--     paused partition is refused (AMZ01); each changed memory's history is cut to the
--     newest history_keep rows (only memories past it are visited); and the history of
--     memories deleted more than history_keep_deleted_days ago goes in the partitions
--     this batch purged from. Decided: per-memory rows, not one summary row per batch —
--     a person can still see why one memory changed or went, and it now costs a heap row
--     and its key per change.
-- v2 stays (the previous release calls it during a rolling upgrade; its writes are recorded
-- by the trigger as before); v3, called by no release once this one runs, is dropped by
-- the migration.


CREATE OR REPLACE FUNCTION amrita_memory.sweep_batch_v4(
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
    v_keep integer := greatest(amrita_memory.trail_setting_v1('amrita_memory.history_keep', 20), 1);
    v_days integer := amrita_memory.trail_setting_v1('amrita_memory.history_keep_deleted_days', 30);
    v_parts text[];
    v_ids text[];
    v_deleting text[];
    v_paused text;
    v_key text;
    v_mid text;
    v_cut bigint;
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
           (SELECT array_agg(h.partition_key) FROM history h),
           (SELECT array_agg(h.memory_id) FROM history h),
           (SELECT array_agg(DISTINCT g.partition_key) FROM purge g)
      INTO scanned, v_last, demoted, purged, purged_ids, v_parts, v_ids, v_deleting;
    IF NOT p_dry_run THEN
        PERFORM set_config('amrita_memory.history_by_writer', '', true);
    END IF;

    IF v_ids IS NOT NULL THEN
        IF v_kind IN ('llm', 'extraction', 'l3') THEN
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

        -- The bounds, as record_memory_change_v2: per memory the newest v_keep changes stay
        -- (only memories past it are visited), ...
        SELECT array_agg(u.partition_key), array_agg(u.memory_id) INTO v_parts, v_ids
          FROM unnest(v_parts, v_ids) AS u(partition_key, memory_id)
         WHERE EXISTS (SELECT 1 FROM amrita_memory.memory_change c
                        WHERE c.partition_key = u.partition_key AND c.memory_id = u.memory_id
                        ORDER BY c.seq DESC
                       OFFSET v_keep LIMIT 1);
        FOR v_key, v_mid IN SELECT u.partition_key, u.memory_id
                              FROM unnest(v_parts, v_ids) AS u(partition_key, memory_id)
        LOOP
            SELECT c.seq INTO v_cut
              FROM amrita_memory.memory_change c
             WHERE c.partition_key = v_key AND c.memory_id = v_mid
             ORDER BY c.seq DESC
            OFFSET v_keep LIMIT 1;
            IF v_cut IS NOT NULL THEN
                DELETE FROM amrita_memory.memory_change h
                 WHERE h.partition_key = v_key AND h.memory_id = v_mid AND h.seq <= v_cut;
            END IF;
        END LOOP;

        -- ... and the history of memories deleted more than v_days ago, in the partitions
        -- this batch purged from.
        IF v_deleting IS NOT NULL THEN
            DELETE FROM amrita_memory.memory_change h
             USING (SELECT DISTINCT d.partition_key, d.memory_id
                      FROM amrita_memory.memory_change d
                     WHERE d.partition_key = ANY (v_deleting)
                       AND d.after IS NULL
                       AND d.at < now() - make_interval(days => v_days)) gone
             WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
               AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                                WHERE m.partition_key = gone.partition_key
                                  AND m.id = gone.memory_id);
        END IF;
    END IF;

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

COMMENT ON FUNCTION amrita_memory.sweep_batch_v4(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text) IS
'sweep_batch_v3 (one batch in id order from the persisted cursor: demote or purge what outlived its tier; source=user kept under p_protect_user, paused partitions kept) that locks only the rows it changes (SKIP LOCKED) and writes their history rows (update / delete) in the same statement, with the trail''s bounds.';
