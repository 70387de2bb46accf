DROP FUNCTION IF EXISTS amrita_memory.sweep_batch_v8(timestamptz, float8, float8, integer, boolean, boolean, boolean, text, text);
