DROP FUNCTION IF EXISTS amrita_memory.reembed_switch_v2(text, text, text, text, integer, timestamptz);
