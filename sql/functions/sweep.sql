-- The decay sweep (reference §5.2): set-based, in batches, a persisted keyset cursor.


-- The earliest clock a memory of a tier with p_days of lifetime is kept at: p_now minus
-- the largest whole number of microseconds whose age_days_v1 is still <= p_days, found by
-- stepping from p_days * 86,400 s (the float product rounds to either side of it, so
-- plain p_now - p_days would keep or drop a memory one microsecond past the boundary;
-- found by the boundary test). A negative lifetime keeps nothing ('infinity'), one past
-- ~3,000 years (or NaN) everything ('-infinity'). Microseconds are subtracted as hours
-- and seconds, never days: no calendar day of the session's time zone gets in.
CREATE OR REPLACE FUNCTION amrita_memory.sweep_cutoff_v1(p_now timestamptz, p_days float8)
RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
    v_us bigint;
BEGIN
    IF p_days < 0 THEN
        RETURN 'infinity'::timestamptz;
    END IF;
    IF p_days * 86400.0 > 1e11 THEN  -- NaN compares above every number
        RETURN '-infinity'::timestamptz;
    END IF;
    v_us := floor(p_days * 86400e6)::bigint;
    WHILE amrita_memory.age_days_v1(
              p_now - make_interval(hours => ((v_us + 1) / 3600000000)::integer,
                                    secs => ((v_us + 1) % 3600000000) / 1e6),
              p_now) <= p_days LOOP
        v_us := v_us + 1;
    END LOOP;
    WHILE v_us > 0 AND NOT amrita_memory.age_days_v1(
              p_now - make_interval(hours => (v_us / 3600000000)::integer,
                                    secs => (v_us % 3600000000) / 1e6),
              p_now) <= p_days LOOP
        v_us := v_us - 1;
    END LOOP;
    RETURN p_now - make_interval(hours => (v_us / 3600000000)::integer,
                                 secs => (v_us % 3600000000) / 1e6);
END
$$;
COMMENT ON FUNCTION amrita_memory.sweep_cutoff_v1(timestamptz, float8) IS
'The earliest tier clock kept with p_days of lifetime at p_now: exactly where age_days_v1 <= p_days stops holding, to the microsecond. Computed once per sweep batch.';


-- One batch of the tiered sweep. Visits up to p_batch rows in the primary key's order
-- (partition_key, id) after the cursor (p_cursor; the persisted sweep_state.cursor_key
-- when NULL; 'partition_key/id' of the last row, '' = the start: the id is always the last
-- 32 characters, so a partition key may hold any character), not beyond p_until. Each
-- row past its tier lifetime is demoted one tier (high → 5, medium → 3) or, when low,
-- purged. The lifetime is measured from tier_since when p_restart_clock (a demoted memory
-- gets a fresh lifetime in its new tier), else from created_at (the reference: a demotion
-- is then only a delayed purge). With p_protect_user, source = 'user' rows are always
-- kept; a paused partition's rows are kept.
--
-- How. The tier cutoffs are computed once per batch (sweep_cutoff_v1): a memory is kept
-- while its clock is at or after its tier's cutoff. The batch is read without locks and
-- keeps each row's tid; only the rows due for a demotion or a purge are then locked, FOR
-- UPDATE SKIP LOCKED, by their tid (a Tid Scan, no index), and their action decided again
-- on the locked row: a row locked by a concurrent edit, or changed and committed since
-- the batch was read (it no longer has that tid), is skipped this run and swept by the
-- next. A row lock writes the tuple, so locking only the due rows keeps the batch from
-- dirtying every page it reads.
--
-- History. One amrita_memory.sweep_change row per batch that changed something (trail.sql):
-- element i of its arrays is one memory as it was, new_importances[i] / new_sources[i]
-- after (NULL: purged), written by this statement with the trail triggers kept out
-- (amrita_memory.history_by_writer). One row of plain arrays per batch, not one per
-- memory: the history cost the sweep ~13 us per changed memory as rows; as arrays the
-- sweep runs within 1.05x of one without any history. The history bounds are kept once
-- per run, by trim_history_v2 (the caller runs it after the last batch). An automatic
-- actor on a paused partition is refused (AMZ01). Unless p_dry_run, the cursor is saved
-- in the same transaction, so successive batches and runs visit every row; at the end of
-- the table it wraps to the start. Returns the purged ids, so that a secondary vector
-- index (chroma) can drop them too.
--   psql> SELECT * FROM amrita_memory.sweep_batch_v8(now(), 7, 90, 5000, true, true, true, '', NULL);
CREATE OR REPLACE FUNCTION amrita_memory.sweep_batch_v8(
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
    -- the walk's position: the (partition_key, id) after which the batch starts, and the
    -- one it stops at (p_until); '' is before every row
    v_after_pk text;
    v_after_id text;
    v_until_pk text := left(p_until, greatest(length(p_until) - 33, 0));
    v_until_id text := right(p_until, 32);
    -- the actor as current_actor_v1 reads it ('kind:id'; system when unset or unknown)
    v_actor text := coalesce(nullif(current_setting('amrita_memory.actor', true), ''), 'system');
    v_kind text := split_part(v_actor, ':', 1);
    v_actor_id text := nullif(substr(v_actor, length(split_part(v_actor, ':', 1)) + 2), '');
    v_op text := nullif(current_setting('amrita_memory.op', true), '');
    v_note text := nullif(current_setting('amrita_memory.note', true), '');
    v_parts text[];
    v_paused text;
    -- a memory is kept while its clock is at or after its tier's cutoff (importance 1-3
    -- low, 8-10 high, anything else medium, as importance_rank_v1)
    v_cut_low timestamptz := amrita_memory.sweep_cutoff_v1(
        p_now, amrita_memory.tier_days_v1(1, p_short_days, p_long_days));
    v_cut_mid timestamptz := amrita_memory.sweep_cutoff_v1(
        p_now, amrita_memory.tier_days_v1(5, p_short_days, p_long_days));
    v_cut_high timestamptz := amrita_memory.sweep_cutoff_v1(
        p_now, amrita_memory.tier_days_v1(9, p_short_days, p_long_days));
BEGIN
    IF v_kind NOT IN ('person', 'llm', 'extraction', 'l3', 'import', 'system') THEN
        v_kind := 'system';
    END IF;
    IF v_op IS NOT NULL AND v_op NOT IN ('merge') THEN
        v_op := NULL;
    END IF;
    IF v_cursor IS NULL THEN
        -- The row lock also keeps two sweeps from working the same batch at once.
        SELECT s.cursor_key INTO v_cursor FROM amrita_memory.sweep_state s WHERE s.id = 1 FOR UPDATE;
        v_cursor := coalesce(v_cursor, '');
    END IF;
    v_after_pk := left(v_cursor, greatest(length(v_cursor) - 33, 0));
    v_after_id := right(v_cursor, 32);

    IF NOT p_dry_run THEN
        PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    END IF;
    -- One statement: read the batch, lock and change what is due (by tid), record the history.
    WITH batch AS (
        SELECT m.ctid AS tid, m.partition_key, m.id,
               CASE WHEN p_protect_user AND m.source = 'user' THEN 'keep'
                    WHEN EXISTS (SELECT 1 FROM amrita_memory.paused_partition pp
                                  WHERE pp.partition_key = m.partition_key) THEN 'keep'
                    WHEN (CASE WHEN p_restart_clock THEN m.tier_since ELSE m.created_at END)
                         >= CASE WHEN m.importance BETWEEN 1 AND 3 THEN v_cut_low
                                 WHEN m.importance BETWEEN 8 AND 10 THEN v_cut_high
                                 ELSE v_cut_mid END THEN 'keep'
                    WHEN m.importance BETWEEN 1 AND 3 THEN 'purge'
                    ELSE 'demote'
               END AS action
          FROM amrita_memory.memory m
         WHERE (m.partition_key, m.id) > (v_after_pk, v_after_id)
           AND (p_until IS NULL OR (m.partition_key, m.id) <= (v_until_pk, v_until_id))
         ORDER BY m.partition_key, m.id
         LIMIT p_batch
    ), due AS (
        -- only what changes is locked, by its tid; the action again on the locked row
        SELECT m.ctid AS tid, m.partition_key, m.id, m.content, m.tags, m.importance,
               m.category, m.scope, m.source,
               CASE WHEN p_protect_user AND m.source = 'user' THEN 'keep'
                    WHEN EXISTS (SELECT 1 FROM amrita_memory.paused_partition pp
                                  WHERE pp.partition_key = m.partition_key) THEN 'keep'
                    WHEN (CASE WHEN p_restart_clock THEN m.tier_since ELSE m.created_at END)
                         >= CASE WHEN m.importance BETWEEN 1 AND 3 THEN v_cut_low
                                 WHEN m.importance BETWEEN 8 AND 10 THEN v_cut_high
                                 ELSE v_cut_mid END THEN 'keep'
                    WHEN m.importance BETWEEN 1 AND 3 THEN 'purge'
                    ELSE 'demote'
               END AS action
          FROM batch b
          JOIN amrita_memory.memory m ON m.ctid = b.tid
         WHERE b.action <> 'keep' AND NOT p_dry_run
           FOR UPDATE OF m SKIP LOCKED
    ), demote AS (
        UPDATE amrita_memory.memory m
           SET importance = amrita_memory.demoted_importance_v1(d.importance),
               tier_since = CASE WHEN p_restart_clock THEN p_now ELSE m.tier_since END
          FROM due d
         WHERE m.ctid = d.tid AND d.action = 'demote'
        RETURNING m.partition_key, m.id,
                  d.content AS old_content, d.tags AS old_tags, d.importance AS old_importance,
                  d.category AS old_category, d.scope AS old_scope, d.source AS old_source,
                  m.content, m.tags, m.importance, m.category, m.scope, m.source
    ), purge AS (
        DELETE FROM amrita_memory.memory m
         USING due d
         WHERE m.ctid = d.tid AND d.action = 'purge'
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
           (SELECT b.partition_key || '/' || b.id FROM batch b
             ORDER BY b.partition_key DESC, b.id DESC LIMIT 1),
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
           SET cursor_key = next_cursor, updated_at = p_now,
               passes = s.passes + CASE WHEN wrapped AND p_until IS NULL THEN 1 ELSE 0 END
         WHERE s.id = 1;
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION amrita_memory.sweep_batch_v8(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text) IS
'One batch of the decay sweep from the persisted cursor, in the primary key''s (partition_key, id) order (cursor ''partition_key/id'', sweep_state.cursor_key): demote or purge what outlived its tier by three cutoffs, locking only those rows by tid, SKIP LOCKED; one sweep_change row per batch.';
