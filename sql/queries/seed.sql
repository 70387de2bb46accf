-- The second seed's memory model: manual-entry guard, filtered lists, the
-- "## Bot Memories" block, scopes loaded into a chat, automatic extraction, clear.
-- Every statement names its partition (or chat/session) key first, the distribution
-- column under Citus.

-- name: update_memory_guarded
-- Change some fields of one memory of partition $1, id $2: $3 content (only together with
-- its new embedding $8 and its search tokens $11), $4 tags, $5 importance, $6 whether $7
-- replaces the category, $9 the writer's fingerprint, $10 now; NULL keeps a field. $12
-- whether a source=user memory is refused (SQLSTATE AMP01; true for every automatic
-- caller). No row when the id is not in the partition. SQLSTATE AMF01 / AMF03 as for
-- insert_memory, 22023 for content without its embedding.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at
  FROM amrita_memory.update_memory_v3($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12);

-- name: take_over_memory
-- An automatic writer ($3: llm, the chat model's tools, or l3, the loop) is about to change
-- what memory $2 of partition $1 says: the row becomes its own (origin = $3), so extraction
-- — which replaces only origin = 'extraction' rows (delete_auto_memories) — no longer
-- replaces what the chat model or the loop corrected. (A person's change makes the row
-- source = 'user' instead: origin_v1.sql.) Runs just before update_memory_guarded in the
-- same transaction and locks the row for it. Returns the origin the row had; no row when
-- it already was $3's or the id is not in the partition.
UPDATE amrita_memory.memory AS m
   SET origin = $3
  FROM (SELECT id, origin FROM amrita_memory.memory
         WHERE partition_key = $1 AND id = $2 FOR UPDATE) AS old
 WHERE m.partition_key = $1 AND m.id = old.id AND old.origin IS DISTINCT FROM $3
RETURNING old.origin AS previous;

-- name: delete_memory_guarded
-- Delete memory $2 of partition $1; $3 refuses a source=user memory (SQLSTATE AMP01).
-- NULL when the id is not in the partition.
SELECT amrita_memory.delete_memory_v1($1, $2, $3) AS id;

-- name: list_memories_filtered
-- One page of partition $1 in (created_at, id) order, only category $4 (NULL = any) and
-- importance >= $5 (NULL = any): $2 rows from offset $3, each with the filtered total.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at, count(*) OVER ()::integer AS total
  FROM amrita_memory.memory
 WHERE partition_key = $1
   AND ($4::text IS NULL OR category = $4::text)
   AND ($5::integer IS NULL OR importance >= $5::integer)
 ORDER BY created_at, id
 LIMIT $2 OFFSET $3;

-- name: count_memories_filtered
-- How many memories of partition $1 match category $2 (NULL = any) and importance >= $3.
SELECT count(*)::integer AS n
  FROM amrita_memory.memory
 WHERE partition_key = $1
   AND ($2::text IS NULL OR category = $2::text)
   AND ($3::integer IS NULL OR importance >= $3::integer);

-- name: memory_block
-- Everything one turn injects, in ONE round trip (memos, loaded scopes, candidates,
-- relevant memories, profile summary, and one row of kind paused per paused partition,
-- which is left out): sql/functions/injection.sql, planned once per connection. $1 memo keys, $2 chat key, $3 scope keys, $4 candidate limit, $5 query
-- vector (NULL: none), $6 how many relevant memories, $7 profile key (NULL: none),
-- $8 the candidates' version the caller holds (NULL: none; equal: they are not sent).
-- updated_at arrives as epoch seconds: 200 floats decode in a fraction of the time of
-- 200 timestamptz (bench/bench_injection.py).
SELECT b.kind, b.partition_key, b.content, b.id, b.importance, b.category,
       extract(epoch FROM b.updated_at)::float8 AS updated_epoch
  FROM amrita_memory.memory_block_v3($1::text[], $2::text, $3::text[], $4::integer,
                                     $5::vector, $6::integer, $7::text, $8::bigint) b;

-- name: load_scope
-- Chat $1 loads partition $2 (speaker $3) at $4; loading it again refreshes the time.
INSERT INTO amrita_memory.loaded_scope (chat_key, scope_key, loaded_by, loaded_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (chat_key, scope_key) DO UPDATE SET loaded_by = EXCLUDED.loaded_by,
                                                loaded_at = EXCLUDED.loaded_at;

-- name: unload_scope
-- Chat $1 unloads partition $2; returns it, no row when it was not loaded.
DELETE FROM amrita_memory.loaded_scope
 WHERE chat_key = $1 AND scope_key = $2
RETURNING scope_key;

-- name: unload_all_scopes
-- Everything chat $1 loaded goes (its session expired); returns how many.
WITH gone AS (
    DELETE FROM amrita_memory.loaded_scope WHERE chat_key = $1 RETURNING 1
)
SELECT count(*)::integer AS n FROM gone;

-- name: expire_loaded_scopes
-- Scopes loaded by chats whose session is over: loaded before $1 (now -
-- session_idle_minutes) and no line in the chat's log since $1. Returns how many went.
WITH gone AS (
    DELETE FROM amrita_memory.loaded_scope l
     WHERE l.loaded_at <= $1
       AND coalesce((SELECT max(c.created_at) FROM amrita_memory.chat_log c
                      WHERE c.session_key = l.chat_key), l.loaded_at) <= $1
    RETURNING 1
)
SELECT count(*)::integer AS n FROM gone;

-- name: list_loaded_scopes
-- The partitions chat $1 has loaded, oldest first.
SELECT scope_key, loaded_by, loaded_at
  FROM amrita_memory.loaded_scope
 WHERE chat_key = $1
 ORDER BY loaded_at, scope_key;

-- name: spoke_in_session
-- Whether user $2 has a line in the kept chat log of session $1 (the default membership
-- check of memory_load_context: someone who spoke in a group is one of its members).
SELECT EXISTS (
    SELECT 1 FROM amrita_memory.chat_log c
     WHERE c.session_key = $1 AND c.user_id = $2 AND c.role = 'user'
) AS spoke;

-- name: expired_sessions
-- Sessions whose newest line is older than $1 (now - session_idle_minutes) and that have
-- lines no extraction has read yet (id past the newest chat_until_id of a run that did
-- not fail), oldest first, at most $2. A run that failed (HTTP, database) is retried.
SELECT c.session_key, max(c.id) AS last_id, max(c.created_at) AS last_at
  FROM amrita_memory.chat_log c
 GROUP BY c.session_key
HAVING max(c.created_at) <= $1
   AND max(c.id) > coalesce(
        (SELECT max(r.chat_until_id) FROM amrita_memory.extraction_run r
          WHERE r.session_key = c.session_key AND r.status <> 'failed'), 0)
 ORDER BY max(c.created_at)
 LIMIT $2;

-- name: session_lines_since
-- The lines of session $1 after the last extraction that did not fail (newest $2,
-- oldest first comes from the caller reversing): walks the (session_key, id) key backwards.
SELECT c.id, c.session_key, c.user_id, c.group_id, c.role, c.text, c.created_at
  FROM amrita_memory.chat_log c
 WHERE c.session_key = $1
   AND c.id > coalesce(
        (SELECT max(r.chat_until_id) FROM amrita_memory.extraction_run r
          WHERE r.session_key = $1 AND r.status <> 'failed'), 0)
 ORDER BY c.id DESC
 LIMIT $2;

-- name: auto_lock_partition
-- The partition's cap lock (the key insert_memory_v7 takes), held until the end of the
-- transaction that replaces its extracted memories.
SELECT pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || $1::text, 0));

-- name: delete_auto_memories
-- The memories an earlier extraction made in partition $1 go (this extraction replaces
-- them): origin = 'extraction' and still source = 'auto'. Everything else stays: the chat
-- model's writes, imports, the L3 loop's rows, rows of unknown origin, and any row a
-- person has edited (that made it source = 'user', sql/functions/origin.sql).
-- Returns the ids deleted with their texts (a new row with the same text carries the old
-- one's lineage, sql/queries/lineage.sql lineage_carry).
DELETE FROM amrita_memory.memory
 WHERE partition_key = $1 AND source = 'auto' AND origin = 'extraction'
RETURNING id, content;

-- name: insert_auto_memory
-- One extracted memory into partition $1 inside the replacing transaction: $2 scope,
-- $3 content, $4 importance, $5 category, $6 embedding, $7 fingerprint, $8 now, $9 cap,
-- $10 the content's search tokens, $11-$13 protocol/model/base_url (source 'auto', no
-- author, no tags; origin 'extraction' from the transaction's actor); id NULL when the partition is full (the caller rolls the whole
-- replacement back). SQLSTATE AMF01 / AMF03 as for insert_memory.
SELECT id, rows_before
  FROM amrita_memory.insert_memory_v7($1, $2, $3, '{}'::text[], $4, $5, 'auto', NULL,
                                      $6, $7, $8, $9, $10, $11, $12, $13);

-- name: record_extraction_run
-- One extraction run of session $1 on partition $2: $3 trigger, $4 status, $5 reason,
-- $6 entries written, $7 newest chat_log id read, $8 model, $9-$11 prompt/completion/
-- total tokens, $12 started, $13 finished. Returns its id.
INSERT INTO amrita_memory.extraction_run
       (session_key, partition_key, trigger, status, reason, entries, chat_until_id, model,
        prompt_tokens, completion_tokens, total_tokens, started_at, finished_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING id;

-- name: extraction_runs
-- The newest $2 extraction runs of session $1.
SELECT session_key, id, partition_key, trigger, status, reason, entries, chat_until_id,
       model, prompt_tokens, completion_tokens, total_tokens, started_at, finished_at
  FROM amrita_memory.extraction_run
 WHERE session_key = $1
 ORDER BY id DESC
 LIMIT $2;

-- name: partition_digest
-- What clearing partition $1 would delete, as a count and a digest of (id, updated_at):
-- the confirmation token is derived from it, so a confirmation given before the
-- partition changed no longer matches.
SELECT count(*)::integer AS n,
       coalesce(md5(string_agg(m.id || '@' || m.updated_at::text, ',' ORDER BY m.id)), '') AS digest
  FROM amrita_memory.memory m
 WHERE m.partition_key = $1;

-- name: clear_partition
-- Every memory of partition $1 goes (a person's `clear`, after a backup); returns the ids.
DELETE FROM amrita_memory.memory
 WHERE partition_key = $1
RETURNING id;
