DROP FUNCTION IF EXISTS amrita_memory.search_memories_v5(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer, text, float8, float8);
DROP FUNCTION IF EXISTS amrita_memory.score_memories_v2(text, vector, text[], tsquery, text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, text, float8, float8, text[]);
DROP FUNCTION IF EXISTS amrita_memory.search_vector_ann_v5(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer);
DROP FUNCTION IF EXISTS amrita_memory.search_vector_exact_v5(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text);
