DROP FUNCTION IF EXISTS amrita_memory.trim_history_v2(integer, integer);
DROP FUNCTION IF EXISTS amrita_memory.memory_history_v1(text, text, integer);
DROP VIEW IF EXISTS amrita_memory.sweep_change_entry;
DROP FUNCTION IF EXISTS amrita_memory.sweep_batch_v6(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text);
