-- L3 consolidation statements (amrita_memory_pg/storage/consolidation.py): the cycles
-- and their token usage, the proactive-message queue and the near-duplicate pre-pass.
-- Every statement names the target partition (the distribution column under Citus).

-- name: start_cycle
-- A new cycle of target $1: $2 trigger, $3 started at, $4 dry run. Returns its id.
INSERT INTO amrita_memory.consolidation_cycle (target_key, trigger, started_at, dry_run)
VALUES ($1, $2, $3, $4)
RETURNING id;

-- name: finish_cycle
-- Close cycle $2 of target $1 at $3: $4 ok, $5 error, $6 iterations, $7 tool calls,
-- $8 memories changed, $9 summary. The token totals are the sum of its token_usage rows,
-- so they can never disagree with the per-call record.
UPDATE amrita_memory.consolidation_cycle AS c
   SET ended_at = $3, ok = $4, error = $5, iterations = $6, tool_calls = $7,
       memories_changed = $8, summary = $9,
       prompt_tokens = u.prompt, completion_tokens = u.completion
  FROM (SELECT coalesce(sum(prompt_tokens), 0)::integer AS prompt,
               coalesce(sum(completion_tokens), 0)::integer AS completion
          FROM amrita_memory.token_usage
         WHERE target_key = $1 AND cycle_id = $2) AS u
 WHERE c.target_key = $1 AND c.id = $2
RETURNING c.prompt_tokens, c.completion_tokens;

-- name: record_token_usage
-- One LLM call of cycle $2 of target $1: $3 purpose (step | send | summary), $4 model,
-- $5 prompt and $6 completion tokens, $7 when. Written as soon as the call returns, so a
-- cycle that fails later still accounts for what it spent.
INSERT INTO amrita_memory.token_usage
       (target_key, cycle_id, purpose, model, prompt_tokens, completion_tokens, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: last_finished_cycle
-- The newest finished cycle of target $1 (walks the primary key backwards): when it
-- ended and the summary it left, for subconscious_get_context.
SELECT id, ended_at, ok, summary
  FROM amrita_memory.consolidation_cycle
 WHERE target_key = $1 AND ended_at IS NOT NULL AND NOT dry_run
 ORDER BY id DESC
 LIMIT 1;

-- name: recent_cycles
-- The last $2 finished (not dry-run) cycles of target $1 that left a summary, newest
-- first: the abstracts subconscious_get_context shows ([subconscious] max_abstracts).
SELECT id, ended_at, ok, summary
  FROM amrita_memory.consolidation_cycle
 WHERE target_key = $1 AND ended_at IS NOT NULL AND NOT dry_run
   AND summary IS NOT NULL AND summary <> ''
 ORDER BY id DESC
 LIMIT $2;

-- name: get_cycle
-- One cycle of target $1 by id $2.
SELECT target_key, id, trigger, started_at, ended_at, ok, error, iterations, tool_calls,
       memories_changed, prompt_tokens, completion_tokens, summary, dry_run
  FROM amrita_memory.consolidation_cycle
 WHERE target_key = $1 AND id = $2;

-- name: list_cycles
-- A page of L3 cycles, newest first: of target $1 only (its primary key walked backwards),
-- or of every target when $1 is NULL (the admin page's run list); $2 rows from offset $3,
-- with the number of matching cycles in every row.
SELECT target_key, id, trigger, started_at, ended_at, ok, error, iterations, tool_calls,
       memories_changed, prompt_tokens, completion_tokens, summary, dry_run,
       count(*) OVER ()::integer AS total
  FROM amrita_memory.consolidation_cycle
 WHERE $1::text IS NULL OR target_key = $1
 ORDER BY started_at DESC, target_key, id DESC
 LIMIT $2 OFFSET $3;

-- name: queue_pending_message
-- A proactive message for target $1 from cycle $2: $3 content, $4 created at. Returns its id.
INSERT INTO amrita_memory.pending_message (target_key, cycle_id, content, created_at)
VALUES ($1, $2, $3, $4)
RETURNING id;

-- name: take_pending_messages
-- Deliver target $1's pending messages at $2: marks them delivered and returns them,
-- oldest first. One UPDATE, so two concurrent deliveries never both get a message (W14:
-- each is delivered exactly once).
-- Each take is a send attempt: a failed send gives the row back (release_pending_message).
WITH taken AS (
    UPDATE amrita_memory.pending_message
       SET delivered_at = $2, attempts = attempts + 1
     WHERE target_key = $1 AND delivered_at IS NULL
    RETURNING id, content, created_at
)
SELECT id, content, created_at FROM taken ORDER BY id;

-- name: release_pending_message
-- The send of target $1's message $2 failed with $3: it is pending again (retried on the
-- next send or the target's next private message), the reason kept.
UPDATE amrita_memory.pending_message
   SET delivered_at = NULL, last_error = $3
 WHERE target_key = $1 AND id = $2;

-- name: count_pending_messages
-- How many messages wait for target $1.
SELECT count(*)::integer AS n
  FROM amrita_memory.pending_message
 WHERE target_key = $1 AND delivered_at IS NULL;

-- name: duplicate_pairs
-- The pre-pass: pairs of memories of partition $1 with cosine similarity >= $2.
SELECT a_id, b_id, similarity
  FROM amrita_memory.duplicate_pairs_v1($1, $2);

-- name: knowledge_candidates
-- The distillation pre-pass: memories of partition $1 worth a global knowledge entry
-- (similarity $2, the fact in at least $3 other partitions), strongest evidence first.
SELECT id, content, importance, category, partitions
  FROM amrita_memory.knowledge_candidates_v1($1, $2, $3);

-- name: memories_for_consolidation
-- Every memory of partition $1 with what the loop's listing and duplicate helper show
-- (no vectors: the similarity is computed in SQL), in (created_at, id) order.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at
  FROM amrita_memory.memory
 WHERE partition_key = $1
 ORDER BY created_at, id;

-- name: memory_stats
-- Partition $1 in numbers for subconscious_get_memory_stats / get_context: total, how
-- many are low importance (1-3), oldest and newest creation, the average content length.
SELECT count(*)::integer AS total,
       count(*) FILTER (WHERE importance <= 3)::integer AS low,
       min(created_at) AS oldest, max(created_at) AS newest,
       coalesce(floor(avg(char_length(content))), 0)::integer AS avg_length
  FROM amrita_memory.memory
 WHERE partition_key = $1;
