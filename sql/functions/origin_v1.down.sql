-- Undo origin_v1.sql: the trigger, then the functions (the column is the migration's).
DROP TRIGGER IF EXISTS memory_person_takes_over ON amrita_memory.memory;
DROP FUNCTION IF EXISTS amrita_memory.person_takes_over_v1();
DROP FUNCTION IF EXISTS amrita_memory.actor_origin_v1();
