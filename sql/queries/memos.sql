-- L1 memo statements (amrita_memory_pg/storage/memos.py, one typed wrapper each).
-- Writes go through memo_append_v1 / memo_write_v1, which check memo_max_chars
-- (characters, = Python's len()) under the row lock, so concurrent appends never lose
-- one and never overshoot the cap. Every statement filters by the partition key.

-- name: get_memo
-- The memo of one partition: a primary-key lookup, no cache (a per-process cache went
-- stale across processes in the reference). No row = no memo.
SELECT content, version, updated_at
  FROM amrita_memory.memo
 WHERE partition_key = $1;

-- name: get_memos
-- The non-empty memos of several partitions (a speaker's personal + group memo) in one
-- round trip; an empty memo is never injected, so it is not fetched either.
SELECT partition_key, content
  FROM amrita_memory.memo
 WHERE partition_key = ANY($1::text[]) AND content <> '';

-- name: append_memo
-- Append a line unless the result exceeds the cap ($3, characters); $4 = now.
-- Always one row: applied, chars (new or would-be length), current_chars, version.
SELECT applied, chars, current_chars, version
  FROM amrita_memory.memo_append_v1($1, $2, $3, $4);

-- name: write_memo
-- Replace the whole memo ('' clears it) unless it exceeds the cap ($3); $4 = now.
SELECT applied, chars, current_chars, version
  FROM amrita_memory.memo_write_v1($1, $2, $3, $4);
