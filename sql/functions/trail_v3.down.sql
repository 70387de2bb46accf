-- Undo trail_v3.sql: the triggers without their WHEN (trail_v2.sql's), then memory_fields_v2 goes.
DROP TRIGGER IF EXISTS trail_memory_insert ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_update ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_delete ON amrita_memory.memory;
CREATE TRIGGER trail_memory_insert
    AFTER INSERT ON amrita_memory.memory
    REFERENCING NEW TABLE AS trail_new
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v2();
CREATE TRIGGER trail_memory_update
    AFTER UPDATE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old NEW TABLE AS trail_new
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v2();
CREATE TRIGGER trail_memory_delete
    AFTER DELETE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v2();
DROP FUNCTION IF EXISTS amrita_memory.memory_fields_v2(text, text[], smallint, text, text, text);
