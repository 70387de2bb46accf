-- Undo knowledge_v2.sql (release 1 stays: 0011_knowledge installed it).
DROP FUNCTION IF EXISTS amrita_memory.knowledge_search_v2(vector, text[], text, integer, text, float8, float8);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_set_tokens_v1(text, text, text, text, text[], boolean);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_update_v2(text, text, text, text, integer, integer, vector, text, integer, timestamptz, text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_create_v2(text, text, text, text, vector, text, integer, timestamptz, text[], text, text, text);
