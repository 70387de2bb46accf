DROP FUNCTION IF EXISTS amrita_memory.import_memory_v1(text, text, text, text, text[], integer, timestamptz, vector, text, timestamptz, integer, boolean, text, text, text);
