DROP FUNCTION IF EXISTS amrita_memory.update_memory_v1(text, text, text, text[], integer, boolean, text, vector, text, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.insert_memory_v2(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.require_store_model_v1(text, integer, timestamptz, text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.search_memories_v3(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], integer);
DROP FUNCTION IF EXISTS amrita_memory.search_memories_ann_v3(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], integer);
DROP FUNCTION IF EXISTS amrita_memory.search_memories_exact_v3(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[]);
DROP FUNCTION IF EXISTS amrita_memory.memory_matches_v1(smallint, text, text[], integer, integer, text, text[]);
