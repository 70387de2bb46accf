DROP FUNCTION IF EXISTS amrita_memory.reembed_switch_v1(text, text, text, text, integer, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.reembed_pending_count_v1(text);
DROP FUNCTION IF EXISTS amrita_memory.reembed_pending_knowledge_v1(text, text, integer);
DROP FUNCTION IF EXISTS amrita_memory.reembed_pending_v1(text, text, text, integer);
