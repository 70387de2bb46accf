DROP FUNCTION IF EXISTS amrita_memory.trim_history_v1(integer, integer);
DROP FUNCTION IF EXISTS amrita_memory.sweep_batch_v5(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text);
