DROP FUNCTION IF EXISTS amrita_memory.sweep_batch_v1(timestamptz, float8, float8, integer, boolean, boolean, text, text);
DROP FUNCTION IF EXISTS amrita_memory.search_memories_v1(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], integer);
DROP FUNCTION IF EXISTS amrita_memory.insert_memory_v1(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text, text, text);
