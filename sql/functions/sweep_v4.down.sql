DROP FUNCTION IF EXISTS amrita_memory.sweep_batch_v4(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text);
