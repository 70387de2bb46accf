DROP FUNCTION IF EXISTS amrita_memory.activity_touch_v1(text, integer, integer, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.chat_log_append_v1(text, text, text, text, text, timestamptz, integer);
