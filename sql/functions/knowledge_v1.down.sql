-- Undo knowledge_v1.sql.
DROP FUNCTION IF EXISTS amrita_memory.knowledge_release_suggestions_v1(bigint);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_complete_suggestions_v1(bigint, timestamptz, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_claim_suggestions_v1(bigint, timestamptz, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_suggest_v1(text, text, text, text, text, text, text, integer, integer, integer, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.reembed_pending_knowledge_v2(text, text, integer);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_search_v1(vector, integer);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_read_v1(text, integer, integer);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_list_v1();
DROP FUNCTION IF EXISTS amrita_memory.knowledge_line_count_v1(text);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_delete_v1(text);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_update_v1(text, text, text, text, integer, integer, vector, text, integer, timestamptz, text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_create_v1(text, text, text, text, vector, text, integer, timestamptz, text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.knowledge_lines_v1(text);
