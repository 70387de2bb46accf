-- The same reads as reference_sqlite.sql when the old plugin's nonebot-plugin-orm
-- database is PostgreSQL (`--db postgresql://…`), each run in a read-only transaction.

-- name: reference_memos_pg
-- Every L1 memo row of the old plugin (PostgreSQL).
SELECT user_id, content, version, updated_at
  FROM amrita_plugin_memory_user_memo;

-- name: reference_state_pg
-- The old plugin's single L3 state row (uid $1 = 'amrita_memory'), PostgreSQL.
SELECT payload
  FROM amrita_plugin_memory_subconscious_state
 WHERE uid = $1;
