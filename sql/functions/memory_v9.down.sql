DROP FUNCTION IF EXISTS amrita_memory.write_memory_v5(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, float8, text[], text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.insert_memory_v6(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text[], text, text, text);
