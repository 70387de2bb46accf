-- Chat log and activity heatmap statements (amrita_memory_pg/storage/activity.py).
-- Written by the chat hooks on every message, so each write is one round trip; the
-- heatmap cell (weekday 0 = Monday, slot = local hour / 2) is computed in Python
-- (domain.activity.heat_cell) so that the time-zone rule lives in one pure function.

-- name: record_user_message
-- A user's line: append it to its session (trimmed to the newest $6 lines) and count it
-- in the speaker's heatmap cell ($7 user key, $8 weekday, $9 slot), both at $5 = now.
SELECT amrita_memory.chat_log_append_v1($1, $2, $3, 'user', $4, $5, $6),
       amrita_memory.activity_touch_v1($7, $8, $9, $5);

-- name: record_bot_message
-- The bot's own line: logged, never counted as user activity (reference W10).
SELECT amrita_memory.chat_log_append_v1($1, $2, $3, 'bot', $4, $5, $6);

-- name: touch_activity
-- Count a user's message in its heatmap cell only (chat log turned off: keep = 0).
SELECT amrita_memory.activity_touch_v1($1, $2, $3, $4);

-- name: get_recent_chat
-- The newest $2 lines of a session, newest first; walks the (session_key, id) primary
-- key backwards, so the cost is O($2) whatever the table holds.
SELECT id, session_key, user_id, group_id, role, text, created_at
  FROM amrita_memory.chat_log
 WHERE session_key = $1
 ORDER BY id DESC
 LIMIT $2;

-- name: get_heatmap
-- One user's non-empty heatmap cells (at most 7 × 12 rows; absent cells are 0).
SELECT weekday, slot, hits
  FROM amrita_memory.activity_heatmap
 WHERE user_key = $1;
