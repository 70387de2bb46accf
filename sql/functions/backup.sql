-- Backups of the whole store. The JSONL backup carries every table of the schema; the
-- tables the Python does not name column by column (maintenance/backup.py GENERIC_TABLES)
-- go through these functions, which take the table's name as data: each builds its
-- statement with format('%I'), inside the amrita_memory schema only.
--
-- Canonical content. A row's canonical text is its to_jsonb minus the columns a restore
-- recomputes (p_skip: search tokens and the like), written under TimeZone UTC and
-- shortest-exact floats, so the same rows give the same text on any server and session.
-- A table's digest is the md5 of its rows' sorted md5s: independent of row order and of
-- physical layout, and the sort is of 32-character hashes, never of the rows themselves.


-- Rows and digest of one table of the schema, without the columns p_skip.
--   psql> SELECT * FROM amrita_memory.table_digest_v1('memo', '{}');
CREATE OR REPLACE FUNCTION amrita_memory.table_digest_v1(p_table text, p_skip text[])
RETURNS TABLE (row_count bigint, digest text)
LANGUAGE plpgsql STABLE
SET TimeZone = 'UTC'
SET extra_float_digits = 1
AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT count(*), md5(coalesce(string_agg(h, '''' ORDER BY h), ''''))
           FROM (SELECT md5((to_jsonb(t) - $1)::text) AS h FROM amrita_memory.%I t) s',
        p_table)
    USING coalesce(p_skip, '{}'::text[]);
END
$$;
COMMENT ON FUNCTION amrita_memory.table_digest_v1(text, text[]) IS
'Row count and content digest of one table of the schema (md5 of the sorted md5s of each row''s to_jsonb minus p_skip, in UTC): what a backup records and backup verify compares.';


-- Every row of one table as its canonical jsonb text (minus p_skip), for the JSONL.
--   psql> SELECT * FROM amrita_memory.export_table_v1('l3_state', '{}');
CREATE OR REPLACE FUNCTION amrita_memory.export_table_v1(p_table text, p_skip text[])
RETURNS SETOF text
LANGUAGE plpgsql STABLE
SET TimeZone = 'UTC'
SET extra_float_digits = 1
AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT (to_jsonb(t) - $1)::text FROM amrita_memory.%I t', p_table)
    USING coalesce(p_skip, '{}'::text[]);
END
$$;
COMMENT ON FUNCTION amrita_memory.export_table_v1(text, text[]) IS
'Every row of one table of the schema as jsonb text without the columns p_skip (timestamps in UTC): the JSONL backup''s rows of the tables exported generically.';


-- Insert rows (a jsonb array of objects as export_table_v1 wrote them) into one table,
-- identity values as given (OVERRIDING SYSTEM VALUE). Only the columns the first row
-- names are written: a column the backup predates takes its default, generated columns
-- are computed. Returns the rows inserted.
--   psql> SELECT amrita_memory.import_rows_v1('paused_partition', '[{"partition_key": "global", ...}]');
CREATE OR REPLACE FUNCTION amrita_memory.import_rows_v1(p_table text, p_rows jsonb)
RETURNS integer
LANGUAGE plpgsql
SET TimeZone = 'UTC'
AS $$
DECLARE
    v_cols text;
    v_done integer;
BEGIN
    IF jsonb_typeof(p_rows) <> 'array' OR jsonb_array_length(p_rows) = 0 THEN
        RETURN 0;
    END IF;
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_cols
      FROM pg_attribute a
     WHERE a.attrelid = format('amrita_memory.%I', p_table)::regclass
       AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
       AND p_rows -> 0 ? a.attname;
    IF v_cols IS NULL THEN
        RETURN 0;
    END IF;
    EXECUTE format(
        'INSERT INTO amrita_memory.%I (%s) OVERRIDING SYSTEM VALUE
         SELECT %s FROM jsonb_populate_recordset(NULL::amrita_memory.%I, $1)',
        p_table, v_cols, v_cols, p_table)
    USING p_rows;
    GET DIAGNOSTICS v_done = ROW_COUNT;
    RETURN v_done;
END
$$;
COMMENT ON FUNCTION amrita_memory.import_rows_v1(text, jsonb) IS
'Restore: insert a jsonb array of rows (export_table_v1''s objects) into one table of the schema, identity values as given; columns the rows lack take their defaults. Returns rows inserted.';


-- Empty one table of the schema (a restore's transaction, before its rows come back).
CREATE OR REPLACE FUNCTION amrita_memory.clear_table_v1(p_table text)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_done bigint;
BEGIN
    EXECUTE format('DELETE FROM amrita_memory.%I', p_table);
    GET DIAGNOSTICS v_done = ROW_COUNT;
    RETURN v_done;
END
$$;
COMMENT ON FUNCTION amrita_memory.clear_table_v1(text) IS
'Restore: delete every row of one table of the schema in the caller''s transaction (DELETE, not TRUNCATE: no lock beyond the rows). Returns rows deleted.';


-- After a restore put explicit identity values in: move each identity column's sequence
-- past the largest value, so the next insert does not collide with a restored row.
CREATE OR REPLACE FUNCTION amrita_memory.reset_identity_v1(p_table text)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_col text;
    v_seq text;
    v_max bigint;
BEGIN
    FOR v_col IN SELECT a.attname FROM pg_attribute a
                  WHERE a.attrelid = format('amrita_memory.%I', p_table)::regclass
                    AND a.attidentity <> '' AND NOT a.attisdropped
    LOOP
        v_seq := pg_get_serial_sequence(format('amrita_memory.%I', p_table), v_col);
        EXECUTE format('SELECT max(%I) FROM amrita_memory.%I', v_col, p_table) INTO v_max;
        IF v_max IS NOT NULL THEN
            PERFORM setval(v_seq, v_max, true);
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION amrita_memory.reset_identity_v1(text) IS
'Restore: set each identity sequence of one table of the schema to its largest value, so new rows never collide with restored ones.';


-- The scheduled backup's claim ([backup] schedule): the ONE process of the fleet that
-- moves backup_schedule.last_slot forward to p_slot takes the slot's backup. A
-- transaction-level advisory try-lock first: a second process ticking at the same
-- moment gets false at once instead of queueing on the row (then the row's own
-- re-check would refuse it anyway). No session lock: PgBouncer transaction mode works.
-- Returns true when the caller has the slot.
--   psql> SELECT amrita_memory.claim_backup_slot_v1('2026-12-04 03:00+00', 'host:123');
CREATE OR REPLACE FUNCTION amrita_memory.claim_backup_slot_v1(p_slot timestamptz, p_by text)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    v_done integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended('amrita_memory.backup_schedule', 0)) THEN
        RETURN false;
    END IF;
    INSERT INTO amrita_memory.backup_schedule (id) VALUES (1) ON CONFLICT (id) DO NOTHING;
    UPDATE amrita_memory.backup_schedule
       SET last_slot = p_slot, claimed_by = p_by, claimed_at = now(),
           finished_at = NULL, stem = NULL, ok = NULL, error = NULL
     WHERE id = 1 AND (last_slot IS NULL OR last_slot < p_slot);
    GET DIAGNOSTICS v_done = ROW_COUNT;
    RETURN v_done = 1;
END
$$;
COMMENT ON FUNCTION amrita_memory.claim_backup_slot_v1(timestamptz, text) IS
'Scheduled backups: claim the slot p_slot for p_by (advisory xact try-lock, then move backup_schedule.last_slot forward); true for exactly one caller per slot.';
