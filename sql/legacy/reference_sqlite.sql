-- Statements run against the OLD plugin's database (SQLite, opened read-only) by
-- amrita_memory_pg/maintenance/legacy_import.py. Not PostgreSQL: kept apart from
-- sql/queries/, whose statements are PREPAREd against our schema by the test suite.
-- Table names are those of amrita_plugin_memory 0.8.1 (reference §6.1, §8.10).

-- name: reference_memos
-- Every L1 memo row: user_id is the session key (current or legacy format).
SELECT user_id, content, version, updated_at
  FROM amrita_plugin_memory_user_memo;

-- name: reference_state
-- The single L3 state row (uid = 'amrita_memory'); payload is JSON text.
SELECT payload
  FROM amrita_plugin_memory_subconscious_state
 WHERE uid = ?;
