DROP FUNCTION IF EXISTS amrita_memory.search_memories_v2(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], integer);
DROP FUNCTION IF EXISTS amrita_memory.search_memories_exact_v2(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[]);
