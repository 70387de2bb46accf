DROP FUNCTION IF EXISTS amrita_memory.duplicate_pairs_v1(text, double precision);
