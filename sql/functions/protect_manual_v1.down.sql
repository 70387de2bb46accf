DROP FUNCTION IF EXISTS amrita_memory.delete_memory_v1(text, text, boolean);
DROP FUNCTION IF EXISTS amrita_memory.update_memory_v2(text, text, text, text[], integer, boolean, text, vector, text, timestamptz, boolean);
