-- The memory's trail, release 3 (migration 0030_write_fast, issue 24): a writing function
-- may record its own history, set-wise in its own statement, instead of the trigger.
-- Released files are never edited.
--
-- Why. Measured (in-server, pg_stat_user_functions; and backend CPU per call): the
-- statement trigger record_memory_change_v2 cost a one-row insert about as much as the
-- insert itself (0.15-0.23 ms of ~0.45 ms): the AFTER-trigger queue, the plpgsql call,
-- plans over transition tables and four statements, for ONE history row; the sweep paid
-- ~100 us per demoted or purged memory, most of it memory_fields_v1 (declared IMMUTABLE
-- over the STABLE jsonb_build_object, so never inlined: the SQL-function executor ran once
-- per row). The same history row written by the writing function's own statement (a
-- data-modifying CTE) costs a heap row and its key, nearly nothing more.
--
-- How. The three trail triggers fire unless the transaction setting
--   amrita_memory.history_by_writer = 'on'
-- which a writing function sets just before its statement on the memory table and clears
-- just after it (a failure rolls the setting back with the statement). Such a function
-- writes exactly the rows record_memory_change_v2 would (read trail_v1.sql: fields, actor,
-- op, note), refuses a paused partition for an automatic actor (AMZ01) and keeps the
-- bounds; today insert_memory_v4 / write_memory_v3 (memory_v7.sql) and sweep_batch_v4
-- (sweep_v4.sql). Every other path — named queries, restore, import, functions of older
-- releases during a rolling upgrade — never sets it and is recorded by the trigger as
-- before. The setting is no access control: whoever may write the memory table may also
-- write memory_change.
--
-- memory_fields_v2 = memory_fields_v1 declared STABLE (what jsonb_build_object is), so
-- that PostgreSQL inlines it into the statement instead of calling it per row.


CREATE OR REPLACE FUNCTION amrita_memory.memory_fields_v2(
    p_content text, p_tags text[], p_importance smallint, p_category text, p_scope text,
    p_source text)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT jsonb_build_object('content', p_content, 'tags', to_jsonb(p_tags),
                              'importance', p_importance, 'category', p_category,
                              'scope', p_scope, 'source', p_source)
$$;
COMMENT ON FUNCTION amrita_memory.memory_fields_v2(text, text[], smallint, text, text, text) IS
'memory_fields_v1 (the fields a change history records, as jsonb) declared STABLE, so that it is inlined into the writing statement instead of called per row.';


DROP TRIGGER IF EXISTS trail_memory_insert ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_update ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_delete ON amrita_memory.memory;
CREATE TRIGGER trail_memory_insert
    AFTER INSERT ON amrita_memory.memory
    REFERENCING NEW TABLE AS trail_new
    FOR EACH STATEMENT
    WHEN (current_setting('amrita_memory.history_by_writer', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION amrita_memory.record_memory_change_v2();
CREATE TRIGGER trail_memory_update
    AFTER UPDATE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old NEW TABLE AS trail_new
    FOR EACH STATEMENT
    WHEN (current_setting('amrita_memory.history_by_writer', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION amrita_memory.record_memory_change_v2();
CREATE TRIGGER trail_memory_delete
    AFTER DELETE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old
    FOR EACH STATEMENT
    WHEN (current_setting('amrita_memory.history_by_writer', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION amrita_memory.record_memory_change_v2();
