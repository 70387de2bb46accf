-- The memory's trail, release 4 (migration 0043_trail_row_triggers, issue 24): the three
-- trail triggers are ROW-level, so a writer that records its own history (the
-- amrita_memory.history_by_writer flag of trail_v3.sql) no longer pays for them at all.
-- Released files are never edited.
--
-- Why. trail_v3's triggers were AFTER ... FOR EACH STATEMENT with transition tables
-- (REFERENCING OLD/NEW TABLE) and a WHEN on the flag. PostgreSQL fills a statement
-- trigger's transition tables for EVERY row the statement changes, whatever the WHEN
-- says (a statement trigger's WHEN is only evaluated when it would fire, at the end of
-- the statement): insert_memory_v5 / write_memory_v4 and the sweep still copied every
-- memory row they wrote (~1.7 KB with its embedding) into a tuplestore nobody read.
-- Measured by the lead (100k memories / 1,000 partitions): without the triggers one
-- insert is ~7% faster and a whole-table sweep ~0.1-0.15 s (of ~1.5 s) faster. A
-- row-level AFTER trigger's WHEN is evaluated per row when the event would be queued:
-- false -> nothing queued, nothing copied, no plpgsql call.
--
-- What. record_memory_change_row_v1 writes, for its one row, exactly the rows
-- record_memory_change_v2 (trail_v2.sql; trail_v1.sql's header says what and why) writes
-- for that row: the memory_change row (same columns; actor from current_actor_v1(); op
-- 'create' / 'update' / 'tag' / 'delete' or the 'merge' hint of amrita_memory.op; the
-- note; the fields by memory_fields_v2, inlined), the access-log follow-up (a deleted
-- memory's access rows go, a moved memory's follow its partition_key), the AMZ01 refusal
-- of an automatic actor (llm, extraction, l3) on a paused partition, the bound of the
-- newest history_keep changes of the memory and, on a delete, the deleted-history
-- retention (history_keep_deleted_days) of its partition. The UPDATE trigger's WHEN also
-- skips an update that changes neither a shown field (content, tags, importance,
-- category, scope) nor partition_key: v2 recorded and moved nothing for one either, and
-- an embedding or search-token rewrite of every row (re-embed switch, backfill) must not
-- call plpgsql once per row.
--
-- How a row costs little: one statement per row writes the history row, keeps the bound
-- (a CTE cuts the memory's existing changes up to the history_keep-th newest: with the
-- row added, the newest history_keep stay, as v2's probe-then-delete left them) and does
-- the access-log follow-up; a delete also runs the retention, once per partition and
-- statement (every row of one statement finds the same rows: the triggers run after all
-- of the statement's deletes; the partitions done are kept in the transaction setting
-- amrita_memory.trail_retained under the statement's start time). The pause test runs
-- before the write (it raises, so the order changes nothing).
--
-- Measured (2026-12-04, 2 cores shared, embedded PostgreSQL, 10,000 memories of 384-d in
-- 100 partitions with one history row each; v3 and v4 interleaved, medians of 3 rounds,
-- each in a rolled-back transaction):
--   flock /tmp/bench.lock .venv/bin/python bench/bench_trail_rows.py --rounds 3
--   flock /tmp/bench.lock .venv/bin/python bench/bench_trail_rows.py --only-singles --rounds 10
--                                                   v3 (statement)   v4 (row)   v4/v3
--   writer flag: UPDATE of 10,000 (the sweep's)          0.454 s     0.395 s    0.87
--   writer flag: DELETE of 10,000 (the sweep's)          0.085 s     0.059 s    0.69
--   restore of a backup carrying the history (flag)      0.511 s     0.339 s    0.66
--   insert_memory_v5, in-server loop of 1,000          0.159 ms    0.161 ms    1.02
--     (the trail triggers disabled: 0.155 / 0.155 ms: both cost the single insert
--     2-4 %, inside this machine's noise)
--   no flag: INSERT ... SELECT of 10,000                 0.563 s     0.663 s    1.18
--   no flag: DELETE of 10,000                            0.246 s     0.579 s    2.36
--   no flag: restore of a version-1 backup (DELETE +
--     COPY of 10,000; no history carried)                0.845 s     1.400 s    1.66
-- The paths without the flag pay one plpgsql call and one or two statements per row
-- (~10 us an insert, ~33 us a delete) instead of one set-wise statement: named-query
-- writes (one memory each), L3 and import merges (one each), a key migration (a move:
-- the access log only), seed's clear_partition, the restore of a version-1 backup. A
-- JSONL restore of a backup carrying memory_change and memory_access (every version-2
-- backup) clears and copies the memories under the flag (restore.load_jsonl): the rows
-- the triggers would write are emptied and replaced by the backup's anyway.
--
-- record_memory_change_v2 and memory_fields_v1 (which only it called), then called by no
-- trigger nor Python of any release, are dropped by the migration (as 0023_l2_fast
-- dropped record_memory_change_v1); its downgrade re-installs them, then
-- trail_v4.down.sql restores trail_v3.sql's statement triggers.


CREATE OR REPLACE FUNCTION amrita_memory.record_memory_change_row_v1()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_kind text;
    v_id text;
    v_op text := nullif(current_setting('amrita_memory.op', true), '');
    v_note text := nullif(current_setting('amrita_memory.note', true), '');
    v_keep integer;
    v_days integer;
    v_key text;
    v_mark text;
    v_done text;
BEGIN
    IF v_op IS NOT NULL AND v_op NOT IN ('merge') THEN
        v_op := NULL;
    END IF;
    -- A move alone (no shown field changed: a key migration) records nothing, as in v2;
    -- the access log follows its memory to the new partition.
    IF TG_OP = 'UPDATE'
       AND (OLD.content, OLD.tags, OLD.importance, OLD.category, OLD.scope)
           IS NOT DISTINCT FROM (NEW.content, NEW.tags, NEW.importance, NEW.category, NEW.scope)
    THEN
        UPDATE amrita_memory.memory_access a
           SET partition_key = NEW.partition_key
         WHERE a.partition_key = OLD.partition_key AND a.memory_id = OLD.id
           AND OLD.partition_key <> NEW.partition_key;
        RETURN NULL;
    END IF;

    SELECT a.kind, a.id INTO v_kind, v_id FROM amrita_memory.current_actor_v1() a;
    v_key := CASE WHEN TG_OP = 'DELETE' THEN OLD.partition_key ELSE NEW.partition_key END;
    IF v_kind IN ('llm', 'extraction', 'l3')
       AND EXISTS (SELECT 1 FROM amrita_memory.paused_partition p WHERE p.partition_key = v_key)
    THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMZ01',
            MESSAGE = 'the memory of ' || v_key || ' is paused: automatic processes may not change it',
            HINT = 'resume it with `amrita-memory resume` or /memory resume';
    END IF;

    -- One statement per row: the history row, the bound (the newest v_keep changes of
    -- the memory stay: with the row being added, the existing ones up to the v_keep-th
    -- newest go) and the access-log follow-up (a deleted memory's rows go, a moved one's
    -- follow it).
    v_keep := greatest(amrita_memory.trail_setting_v1('amrita_memory.history_keep', 20), 1);
    IF TG_OP = 'INSERT' THEN
        WITH cut AS (
            SELECT c.seq FROM amrita_memory.memory_change c
             WHERE c.partition_key = NEW.partition_key AND c.memory_id = NEW.id
             ORDER BY c.seq DESC
            OFFSET v_keep - 1 LIMIT 1
        ), trimmed AS (
            DELETE FROM amrita_memory.memory_change h USING cut
             WHERE h.partition_key = NEW.partition_key AND h.memory_id = NEW.id
               AND h.seq <= cut.seq
        )
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        VALUES (NEW.partition_key, NEW.id, now(), v_kind, v_id, 'create', NULL,
                amrita_memory.memory_fields_v2(NEW.content, NEW.tags, NEW.importance,
                                               NEW.category, NEW.scope, NEW.source),
                v_note);
    ELSIF TG_OP = 'UPDATE' THEN
        WITH cut AS (
            SELECT c.seq FROM amrita_memory.memory_change c
             WHERE c.partition_key = NEW.partition_key AND c.memory_id = NEW.id
             ORDER BY c.seq DESC
            OFFSET v_keep - 1 LIMIT 1
        ), trimmed AS (
            DELETE FROM amrita_memory.memory_change h USING cut
             WHERE h.partition_key = NEW.partition_key AND h.memory_id = NEW.id
               AND h.seq <= cut.seq
        ), moved AS (
            UPDATE amrita_memory.memory_access a
               SET partition_key = NEW.partition_key
             WHERE a.partition_key = OLD.partition_key AND a.memory_id = OLD.id
               AND OLD.partition_key <> NEW.partition_key
        )
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        VALUES (NEW.partition_key, NEW.id, now(), v_kind, v_id,
                coalesce(v_op,
                         CASE WHEN OLD.content = NEW.content AND OLD.importance = NEW.importance
                                   AND OLD.category IS NOT DISTINCT FROM NEW.category
                                   AND OLD.scope = NEW.scope
                              THEN 'tag' ELSE 'update' END),
                amrita_memory.memory_fields_v2(OLD.content, OLD.tags, OLD.importance,
                                               OLD.category, OLD.scope, OLD.source),
                amrita_memory.memory_fields_v2(NEW.content, NEW.tags, NEW.importance,
                                               NEW.category, NEW.scope, NEW.source),
                v_note);
    ELSE
        WITH cut AS (
            SELECT c.seq FROM amrita_memory.memory_change c
             WHERE c.partition_key = OLD.partition_key AND c.memory_id = OLD.id
             ORDER BY c.seq DESC
            OFFSET v_keep - 1 LIMIT 1
        ), trimmed AS (
            DELETE FROM amrita_memory.memory_change h USING cut
             WHERE h.partition_key = OLD.partition_key AND h.memory_id = OLD.id
               AND h.seq <= cut.seq
        ), gone AS (
            DELETE FROM amrita_memory.memory_access a
             WHERE a.partition_key = OLD.partition_key AND a.memory_id = OLD.id
        )
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        VALUES (OLD.partition_key, OLD.id, now(), v_kind, v_id, coalesce(v_op, 'delete'),
                amrita_memory.memory_fields_v2(OLD.content, OLD.tags, OLD.importance,
                                               OLD.category, OLD.scope, OLD.source),
                NULL, v_note);

        -- The history of memories deleted more than v_days ago, in the partition deleting
        -- now: once per partition and statement (v2 ran it once per statement over the
        -- partitions deleting; it finds the same rows for every row of one statement,
        -- which all run after the statement's deletes). The partitions done are kept in a
        -- transaction setting, under the statement's start time.
        v_days := amrita_memory.trail_setting_v1('amrita_memory.history_keep_deleted_days', 30);
        v_mark := statement_timestamp()::text || '/' || v_days;
        v_done := current_setting('amrita_memory.trail_retained', true);
        IF v_done IS NULL OR split_part(v_done, chr(31), 1) <> v_mark THEN
            v_done := v_mark;
        END IF;
        IF position(chr(31) || OLD.partition_key || chr(31) IN v_done || chr(31)) > 0 THEN
            RETURN NULL;
        END IF;
        PERFORM set_config('amrita_memory.trail_retained', v_done || chr(31) || OLD.partition_key, true);
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT d.partition_key, d.memory_id
                  FROM amrita_memory.memory_change d
                 WHERE d.partition_key = OLD.partition_key
                   AND d.after IS NULL
                   AND d.at < now() - make_interval(days => v_days)) gone
         WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION amrita_memory.record_memory_change_row_v1() IS
'Row-level record_memory_change_v2: the history row of one changed memory, its access-log follow-up, the pause refusal AMZ01 and the bounds; the triggers'' WHEN skips it under amrita_memory.history_by_writer = on.';


COMMENT ON TABLE amrita_memory.memory_change IS
'Change history per memory (the hot writers and row triggers on memory), newest N per memory';


DROP TRIGGER IF EXISTS trail_memory_insert ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_update ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_delete ON amrita_memory.memory;
CREATE TRIGGER trail_memory_insert
    AFTER INSERT ON amrita_memory.memory
    FOR EACH ROW
    WHEN (current_setting('amrita_memory.history_by_writer', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION amrita_memory.record_memory_change_row_v1();
CREATE TRIGGER trail_memory_update
    AFTER UPDATE ON amrita_memory.memory
    FOR EACH ROW
    WHEN (current_setting('amrita_memory.history_by_writer', true) IS DISTINCT FROM 'on'
          AND ((OLD.content, OLD.tags, OLD.importance, OLD.category, OLD.scope, OLD.partition_key)
               IS DISTINCT FROM
               (NEW.content, NEW.tags, NEW.importance, NEW.category, NEW.scope, NEW.partition_key)))
    EXECUTE FUNCTION amrita_memory.record_memory_change_row_v1();
CREATE TRIGGER trail_memory_delete
    AFTER DELETE ON amrita_memory.memory
    FOR EACH ROW
    WHEN (current_setting('amrita_memory.history_by_writer', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION amrita_memory.record_memory_change_row_v1();
