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
-- previous release: 0.14 calls it during a rolling upgrade; the next release drops it.
COMMENT ON FUNCTION amrita_memory.sweep_batch_v8(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text) IS
'One batch of the decay sweep from the persisted cursor, in the primary key''s (partition_key, id) order (cursor ''partition_key/id'', sweep_state.cursor_key): demote or purge what outlived its tier by three cutoffs, locking only those rows by tid, SKIP LOCKED; one sweep_change row per batch.';


-- One batch of the tiered sweep, walking the heap in its physical order (block by block)
-- rather than by the primary key: once the table outgrows shared_buffers, the key's order
-- reads a random page per row, a block range reads each page once, in order (at a million
-- memories a 5,000-row batch's read 80 → 14 ms).
--
-- Visits up to p_batch rows after the position p_cursor (a tid; '(0,0)' = the start;
-- NULL = the persisted sweep_state.cursor_tid, under its row lock, so that two sweeps take
-- turns batch by batch and never work the same rows), not beyond p_until (inclusive).
-- Rows are found block range by block range, each range a TID Range Scan (`ctid >= (b,0)
-- AND ctid < (b+n,0)`) sized from the table's rows per page and doubled while it holds too
-- few; a batch ends at its p_batch-th row, within a block. The decisions are
-- sweep_batch_v8's: the three cutoffs of sweep_cutoff_v1, the clock (tier_since when
-- p_restart_clock, else created_at), p_protect_user, the paused partitions; the due rows
-- locked by tid FOR UPDATE SKIP LOCKED and decided again on the locked row; the history
-- (one sweep_change row per batch that changed something), the access log, AMZ01, the
-- purged ids, the counts. The due rows are locked and changed in the primary key's order
-- (sorted in memory): a demotion that is not HOT adds an entry to every index, and in the
-- key's order those land together (in the heap's order, at random: 1.23x the whole pass
-- at 100k with the block indexes, 0.85x sorted).
--
-- What v8's key order gave for free and a physical walk must do itself: a row is visited
-- at most once per pass. An update writes a new tuple, on the same page when HOT, else
-- wherever there is room, possibly a block the walk has not reached yet; a demotion by
-- this very pass would then be met and demoted again (without p_restart_clock, high →
-- medium → low → purged in one pass). So a row whose tuple was written since the pass
-- began is skipped (not counted in `scanned`), its xmin compared with two starts: p_since,
-- the run's (what the driver read before its first batch: a run's second leg, from the
-- start of the table, must not meet the run's own demotions again), and the lap's
-- (sweep_state.lap_since: set by the batch that starts at the beginning of the table, so
-- successive partial runs of one lap skip each other's demotions too). The one test is
-- "written since": rows inserted or edited meanwhile are left to the next lap as well,
-- as v8 left those past p_until. The xmin is a 32-bit xid: it counts as written since
-- when it lies between the start and the statement's snapshot (an interval, so a row
-- frozen billions of transactions ago is skipped only if its old xid falls in it by
-- chance, and then only for one lap).
--
-- p_dry_run changes nothing and saves nothing. Unless p_dry_run, a persisted cursor is
-- saved in the same transaction; at the end of the table it wraps to '(0,0)' and counts a
-- pass. heap_blocks is the table's size in pages when the batch ran (a progress bar's
-- total; the cursor's block is how far the walk is).
--   psql> SELECT * FROM amrita_memory.sweep_batch_v9(now(), 7, 90, 5000, true, true, true, '(0,0)', NULL, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.sweep_batch_v9(
    p_now timestamptz,
    p_short_days float8,
    p_long_days float8,
    p_batch integer,
    p_restart_clock boolean,
    p_protect_user boolean,
    p_dry_run boolean DEFAULT false,
    p_cursor tid DEFAULT NULL,
    p_until tid DEFAULT NULL,
    p_since xid8 DEFAULT NULL)
RETURNS TABLE (
    scanned integer,
    demoted integer,
    purged integer,
    kept integer,
    next_cursor tid,
    wrapped boolean,
    purged_ids text[],
    heap_blocks bigint)
LANGUAGE plpgsql
AS $$
DECLARE
    v_cursor tid := p_cursor;
    v_lap bigint;
    v_new_lap boolean := false;
    -- transactions from v_lo on wrote what this pass does not visit (xid8 as bigint)
    v_lo bigint;
    v_from tid;
    v_end bigint;
    v_span bigint;
    v_rows_per_page float8;
    v_until_block bigint := (p_until::text::point)[0]::bigint;
    v_tids tid[] := '{}';
    v_keys text[] := '{}';
    v_ids text[] := '{}';
    v_actions text[] := '{}';
    v_last tid;
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
        -- The row lock also keeps two sweeps from working the same batch at once; it gives
        -- this transaction its xid, which a new lap starts from (its own demotions included).
        SELECT s.cursor_tid::tid, s.lap_since INTO v_cursor, v_lap
          FROM amrita_memory.sweep_state s WHERE s.id = 1 FOR UPDATE;
        v_cursor := coalesce(v_cursor, '(0,0)');
        IF NOT p_dry_run AND (v_cursor = '(0,0)'::tid OR v_lap IS NULL) THEN
            v_lap := pg_current_xact_id()::text::bigint;
            v_new_lap := true;
        END IF;
    END IF;
    v_lo := least(p_since::text::bigint, v_lap);
    heap_blocks := pg_relation_size('amrita_memory.memory'::regclass)
                   / current_setting('block_size')::bigint;

    -- The batch: its rows' tids, keys and actions, read block range by block range.
    SELECT CASE WHEN c.relpages > 0 AND c.reltuples > 0 THEN c.reltuples / c.relpages END
      INTO v_rows_per_page
      FROM pg_class c WHERE c.oid = 'amrita_memory.memory'::regclass;
    v_span := ceil(p_batch / coalesce(v_rows_per_page, 4.0) * 1.1)::bigint + 1;
    v_from := v_cursor;
    LOOP
        v_end := (v_from::text::point)[0]::bigint + v_span;
        WITH snap AS (
            -- past every xid whose rows this statement sees: the snapshot's xmax, or this
            -- transaction's own xid + 1 (still running, it may lie at or past the xmax)
            SELECT greatest(pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
                            pg_current_xact_id_if_assigned()::text::bigint + 1) AS hi
        ), found AS (
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
              FROM amrita_memory.memory m, snap
             WHERE m.ctid > v_from
               AND m.ctid < format('(%s,0)', v_end)::tid
               AND (p_until IS NULL OR m.ctid <= p_until)
               -- not written since the pass began: xmin outside [v_lo, the snapshot's xmax)
               AND (v_lo IS NULL
                    OR ((m.xmin::text::bigint - v_lo) & 4294967295) >= snap.hi - v_lo)
             ORDER BY m.ctid
             LIMIT p_batch - cardinality(v_tids)
        )
        SELECT v_tids || coalesce(array_agg(f.tid ORDER BY f.tid), '{}'),
               v_keys || coalesce(array_agg(f.partition_key ORDER BY f.tid), '{}'),
               v_ids || coalesce(array_agg(f.id ORDER BY f.tid), '{}'),
               v_actions || coalesce(array_agg(f.action ORDER BY f.tid), '{}')
          INTO v_tids, v_keys, v_ids, v_actions
          FROM found f;
        EXIT WHEN cardinality(v_tids) >= p_batch OR v_end >= heap_blocks
               OR (p_until IS NOT NULL AND v_end > v_until_block);
        v_from := format('(%s,0)', v_end)::tid;
        v_span := v_span * 2;
    END LOOP;
    scanned := cardinality(v_tids);
    v_last := v_tids[scanned];

    IF NOT p_dry_run THEN
        PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    END IF;
    -- One statement: lock and change what is due (by tid), record the history.
    WITH batch AS (
        SELECT b.tid, b.partition_key, b.id, b.action
          FROM unnest(v_tids, v_keys, v_ids, v_actions) AS b(tid, partition_key, id, action)
         ORDER BY b.partition_key, b.id
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
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'demote')
                ELSE (SELECT count(*)::integer FROM demote) END,
           CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT count(*)::integer FROM purge) END,
           CASE WHEN p_dry_run
                THEN (SELECT coalesce(array_agg(b.id ORDER BY b.id), '{}') FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT coalesce(array_agg(g.id ORDER BY g.id), '{}') FROM purge g) END,
           (SELECT array_agg(DISTINCT c.partition_key) FROM changed c
             WHERE EXISTS (SELECT 1 FROM history))
      INTO demoted, purged, purged_ids, v_parts;
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
    next_cursor := CASE WHEN wrapped THEN coalesce(p_until, '(0,0)'::tid) ELSE v_last END;
    IF NOT p_dry_run AND p_cursor IS NULL THEN
        UPDATE amrita_memory.sweep_state s
           SET cursor_tid = next_cursor::text, updated_at = p_now,
               lap_since = CASE WHEN v_new_lap THEN v_lap ELSE s.lap_since END,
               passes = s.passes + CASE WHEN wrapped AND p_until IS NULL THEN 1 ELSE 0 END
         WHERE s.id = 1;
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION amrita_memory.sweep_batch_v9(timestamptz, float8, float8, integer, boolean, boolean, boolean, tid, tid, xid8) IS
'One batch of the decay sweep from the persisted cursor, in the heap''s physical order (cursor a tid, sweep_state.cursor_tid), read by block ranges (TID Range Scans): sweep_batch_v8''s decisions, locks and history; a row written since the run or the lap began (xmin) is left to the next lap, so no row is visited twice in a pass.';
