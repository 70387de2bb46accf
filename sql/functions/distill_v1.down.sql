-- Undo distill_v1.sql (the partial index ix_memory_knowledge is the migration's).
DROP FUNCTION IF EXISTS amrita_memory.knowledge_candidates_v1(text, double precision, integer);
