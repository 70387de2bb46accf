DROP FUNCTION IF EXISTS amrita_memory.write_memory_v1(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, float8, text, text, text);
