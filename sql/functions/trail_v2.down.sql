-- Undo trail_v2.sql: the triggers back on record_memory_change_v1, then v2 goes.
DROP TRIGGER IF EXISTS trail_memory_insert ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_update ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_delete ON amrita_memory.memory;
CREATE TRIGGER trail_memory_insert
    AFTER INSERT ON amrita_memory.memory
    REFERENCING NEW TABLE AS trail_new
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v1();
CREATE TRIGGER trail_memory_update
    AFTER UPDATE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old NEW TABLE AS trail_new
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v1();
CREATE TRIGGER trail_memory_delete
    AFTER DELETE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v1();
DROP FUNCTION IF EXISTS amrita_memory.record_memory_change_v2();
