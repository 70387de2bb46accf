-- Undo trail_v1.sql: the triggers first, then the functions (the tables are the migration's).
DROP TRIGGER IF EXISTS trail_memory_insert ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_update ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_delete ON amrita_memory.memory;
DROP FUNCTION IF EXISTS amrita_memory.recall_v1(text, text[], float8[], timestamptz, text, text, text, text, integer, boolean);
DROP FUNCTION IF EXISTS amrita_memory.log_access_v1(text[], text[], float8[], timestamptz, text, text, text, text, integer);
DROP FUNCTION IF EXISTS amrita_memory.record_memory_change_v1();
DROP FUNCTION IF EXISTS amrita_memory.memory_fields_v1(text, text[], smallint, text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.trail_setting_v1(text, integer);
DROP FUNCTION IF EXISTS amrita_memory.current_actor_v1();
