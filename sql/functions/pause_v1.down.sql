-- Undo pause_v1.sql: the triggers first, then their function.
DROP TRIGGER IF EXISTS pause_memo ON amrita_memory.memo;
DROP TRIGGER IF EXISTS pause_profile ON amrita_memory.profile;
DROP FUNCTION IF EXISTS amrita_memory.refuse_paused_write_v1();
