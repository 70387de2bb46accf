-- L3 scheduler state per target (amrita_memory_pg/storage/l3_state.py). One row per
-- target partition key; every statement filters on target_key first (the primary key,
-- the distribution column). JSON travels as text ($n::jsonb in, col::text out) so no
-- driver codec is needed. Time is always an argument, never now().

-- name: l3_state_ensure
-- Create a target's row with defaults if it does not exist yet (idempotent).
INSERT INTO amrita_memory.l3_state (target_key, updated_at)
VALUES ($1, $2)
ON CONFLICT (target_key) DO NOTHING;

-- name: l3_state_lock
-- A target's row, locked until the transaction ends: a message and a cycle's end for
-- the same target are applied one after the other, never interleaved.
SELECT target_key, penalty, runs, failures, failures_in_row, running_since, last_run_end,
       last_success_at, last_failure_at, last_error, last_summary, next_run_at,
       plan::text AS plan, heat::text AS heat
  FROM amrita_memory.l3_state
 WHERE target_key = $1
   FOR UPDATE;

-- name: l3_state_get_many
-- The rows of the given targets (absent targets have no row yet), in key order.
SELECT target_key, penalty, runs, failures, failures_in_row, running_since, last_run_end,
       last_success_at, last_failure_at, last_error, last_summary, next_run_at,
       plan::text AS plan, heat::text AS heat
  FROM amrita_memory.l3_state
 WHERE target_key = ANY($1::text[])
 ORDER BY target_key;

-- name: l3_state_record_message
-- A target's message: the new heatmap layers ($2), penalty + 1, and the run planned
-- from them ($3 time, $4 plan JSON or NULL in the fixed back-off mode), at $5.
UPDATE amrita_memory.l3_state
   SET heat = $2::jsonb, penalty = penalty + 1, next_run_at = $3, plan = $4::jsonb,
       updated_at = $5
 WHERE target_key = $1;

-- name: l3_state_start_cycle
-- A cycle starts at $2: remember the penalty it answers for, so that messages arriving
-- while it runs still count after a success.
UPDATE amrita_memory.l3_state
   SET running_since = $2, penalty_at_start = penalty, updated_at = $2
 WHERE target_key = $1;

-- name: l3_state_finish_cycle
-- A cycle ended at $3 with $2 = ok. Success resets the penalty it answered for (what
-- came in meanwhile stays) and the failure streak; a failure keeps the penalty and
-- lengthens the streak (reference D5: "success resets, failure keeps"). $4 error,
-- $5 the model's summary (kept from the last cycle that gave one). Returns the new row.
UPDATE amrita_memory.l3_state
   SET runs = runs + 1,
       failures = failures + CASE WHEN $2 THEN 0 ELSE 1 END,
       failures_in_row = CASE WHEN $2 THEN 0 ELSE failures_in_row + 1 END,
       penalty = CASE WHEN $2 THEN greatest(penalty - coalesce(penalty_at_start, penalty), 0)
                      ELSE penalty END,
       penalty_at_start = NULL,
       running_since = NULL,
       last_run_end = $3,
       last_success_at = CASE WHEN $2 THEN $3 ELSE last_success_at END,
       last_failure_at = CASE WHEN $2 THEN last_failure_at ELSE $3 END,
       last_error = CASE WHEN $2 THEN NULL ELSE $4 END,
       last_summary = coalesce($5, last_summary),
       updated_at = $3
 WHERE target_key = $1
RETURNING target_key, penalty, runs, failures, failures_in_row, running_since, last_run_end,
          last_success_at, last_failure_at, last_error, last_summary, next_run_at,
          plan::text AS plan, heat::text AS heat;

-- name: l3_state_set_next
-- The next planned run of a target ($2 time or NULL, $3 plan JSON or NULL), at $4.
UPDATE amrita_memory.l3_state
   SET next_run_at = $2, plan = $3::jsonb, updated_at = $4
 WHERE target_key = $1;

-- name: l3_state_spoke_during_cycle
-- Whether target $1 spoke since its running cycle started (its penalty grew past the
-- value l3_state_start_cycle remembered). Any process's message counts: the running
-- cycle checks this at every tool-call boundary and gives way (reference §8.3 step 3).
SELECT coalesce(penalty > penalty_at_start, false) AS spoke
  FROM amrita_memory.l3_state
 WHERE target_key = $1 AND running_since IS NOT NULL;

-- name: l3_state_abort_cycle
-- A cycle gave way to the target's message at $2: not a run, not a failure; the penalty
-- (bumped by the message) and the run the message planned stay as they are.
UPDATE amrita_memory.l3_state
   SET running_since = NULL, penalty_at_start = NULL, updated_at = $2
 WHERE target_key = $1
RETURNING target_key, penalty, runs, failures, failures_in_row, running_since, last_run_end,
          last_success_at, last_failure_at, last_error, last_summary, next_run_at,
          plan::text AS plan, heat::text AS heat;

-- name: l3_states_with_runs
-- How many targets have a state row with runs (run here, or imported from the old
-- plugin) and their runs in total: the L3 page says so while the loop is off.
SELECT count(*)::int AS targets, coalesce(sum(runs), 0)::int AS runs
  FROM amrita_memory.l3_state
 WHERE runs > 0;
