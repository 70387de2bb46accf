-- A fresh install (amrita_memory_pg/storage/pg/install.py): the statements around the
-- live files of sql/ that build the present schema on an empty database, in the
-- migration's own transaction.

-- name: create_vector_extension
-- pgvector, in the database's default schema so that other plugins share it. Created by
-- an install or the baseline migration, never at run time; a downgrade leaves it.
CREATE EXTENSION IF NOT EXISTS vector;

-- name: function_body_checks_off
-- Create every function before the tables (a column's DEFAULT calls one, memory.origin)
-- without checking its body against tables that do not exist yet, as pg_dump does. For
-- this transaction only; function_validations checks every body once the tables exist.
SELECT set_config('check_function_bodies', 'off', true) AS check_function_bodies;

-- name: function_body_checks_on
-- Body checks back on for the rest of the transaction (the migrations that follow).
SELECT set_config('check_function_bodies', 'on', true) AS check_function_bodies;

-- name: function_validations
-- One statement per function of our schema that runs its language's validator on it
-- (plpgsql_validator, fmgr_sql_validator): with body checks on, a body naming a column or
-- function that does not exist fails the install here, not on its first call.
SELECT format('SELECT %s(%s)', l.lanvalidator::regproc, p.oid) AS statement
  FROM pg_proc p
  JOIN pg_namespace n ON n.oid = p.pronamespace
  JOIN pg_language l ON l.oid = p.prolang
 WHERE n.nspname = 'amrita_memory'
   AND l.lanvalidator <> 0
 ORDER BY p.proname;
