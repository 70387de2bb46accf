DROP FUNCTION IF EXISTS amrita_memory.memory_block_v2(text[], text, text[], integer, vector, integer, text, bigint);
