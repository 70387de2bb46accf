-- Undo trail_v4.sql: trail_v3.sql's statement triggers (transition tables, WHEN on
-- amrita_memory.history_by_writer) on record_memory_change_v2, then the row function goes.
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
DROP FUNCTION IF EXISTS amrita_memory.record_memory_change_row_v1();
COMMENT ON TABLE amrita_memory.memory_change IS
'Change history per memory (statement triggers on memory), newest N per memory';
