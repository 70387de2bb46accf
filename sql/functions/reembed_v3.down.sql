DROP FUNCTION IF EXISTS amrita_memory.reembed_pending_memories_v1(text, text, integer);
