DROP FUNCTION IF EXISTS amrita_memory.memo_write_v1(text, text, integer, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.memo_append_v1(text, text, integer, timestamptz);
