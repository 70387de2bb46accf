DROP FUNCTION IF EXISTS amrita_memory.update_memory_v3(text, text, text, text[], integer, boolean, text, vector, text, timestamptz, text[], boolean);
DROP FUNCTION IF EXISTS amrita_memory.write_memory_v2(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, float8, text[], text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.insert_memory_v3(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text[], text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.search_memories_v4(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, integer, text, float8, float8);
DROP FUNCTION IF EXISTS amrita_memory.score_memories_v1(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], text, text, float8, float8, text[]);
DROP FUNCTION IF EXISTS amrita_memory.tokens_tsquery_v1(text[]);
DROP FUNCTION IF EXISTS amrita_memory.memory_matches_v2(smallint, text, text[], text, integer, integer, text, text[], text);
