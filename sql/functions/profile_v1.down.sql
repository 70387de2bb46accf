DROP FUNCTION IF EXISTS amrita_memory.profile_save_v1(text, integer, text, text[], text, text, text, bigint, integer, timestamptz);
