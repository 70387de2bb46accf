-- sweep_v3.sql: a paused partition keeps its memories, also through the sweep (issue 27
-- item 4: `amrita-memory sweep --force` demoted and purged a paused partition's rows).
--
-- sweep_batch_v3 = sweep_batch_v2 plus: rows of a partition in amrita_memory.paused_partition
-- are neither demoted nor purged; they count as kept and still advance the cursor, so the
-- pass is not stalled by them and they are swept normally once the partition is resumed.
-- v2 stays (released; older processes keep calling it during a rolling upgrade).

-- One batch of the tiered sweep (reference §5.2), set-based.
--
-- Visits up to p_batch rows in id order after the cursor (the persisted one in
-- sweep_state when p_cursor is NULL), optionally not beyond p_until. Each row past
-- its tier lifetime is demoted one tier (high → 5, medium → 3) or, when low, purged.
-- The lifetime is measured from tier_since when p_restart_clock (a demoted memory
-- gets a fresh lifetime in its new tier), else from created_at (the reference: a
-- demotion is then only a delayed purge). Rows locked by a concurrent edit are
-- skipped (they come round again on the next pass). Unless p_dry_run, the cursor is
-- saved in the same transaction, so successive batches and successive runs visit
-- every row; at the end of the table it wraps to the start. Returns the purged ids so
-- that a secondary vector index (chroma) can drop them too. v2: with p_protect_user,
-- source = 'user' rows are always kept (the setting protect_manual_memories);
-- v3: rows of a paused partition are always kept.
CREATE OR REPLACE FUNCTION amrita_memory.sweep_batch_v3(
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
BEGIN
    IF v_cursor IS NULL THEN
        -- The row lock also keeps two sweeps from working the same batch at once.
        SELECT s.cursor_id INTO v_cursor FROM amrita_memory.sweep_state s WHERE s.id = 1 FOR UPDATE;
        v_cursor := coalesce(v_cursor, '');
    END IF;

    -- One statement: plan the batch, then demote and purge from the same snapshot.
    -- The CTE "batch" is referenced several times, so it is materialised once.
    WITH batch AS (
        SELECT m.id, m.importance,
               CASE WHEN p_protect_user AND m.source = 'user' THEN 'keep'
                    -- v3: a paused partition is never demoted or purged (a pause keeps)
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
         FOR UPDATE SKIP LOCKED
    ), demote AS (
        UPDATE amrita_memory.memory m
           SET importance = amrita_memory.demoted_importance_v1(b.importance),
               tier_since = CASE WHEN p_restart_clock THEN p_now ELSE m.tier_since END
          FROM batch b
         WHERE m.id = b.id AND b.action = 'demote' AND NOT p_dry_run
        RETURNING m.id
    ), purge AS (
        DELETE FROM amrita_memory.memory m
         USING batch b
         WHERE m.id = b.id AND b.action = 'purge' AND NOT p_dry_run
        RETURNING m.id
    )
    SELECT (SELECT count(*)::integer FROM batch),
           (SELECT max(b.id) FROM batch b),
           CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'demote')
                ELSE (SELECT count(*)::integer FROM demote) END,
           CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT count(*)::integer FROM purge) END,
           CASE WHEN p_dry_run
                THEN (SELECT coalesce(array_agg(b.id ORDER BY b.id), '{}') FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT coalesce(array_agg(g.id ORDER BY g.id), '{}') FROM purge g) END
      INTO scanned, v_last, demoted, purged, purged_ids;

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

COMMENT ON FUNCTION amrita_memory.sweep_batch_v3(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text) IS
'One batch of the tiered sweep in id order from the persisted cursor (sweep_state): demote or purge what outlived its tier, FOR UPDATE SKIP LOCKED; with p_protect_user, source=user rows are kept; rows of a paused partition are always kept; returns counts and purged ids.';
