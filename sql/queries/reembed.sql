-- The online re-embed (amrita_memory_pg/maintenance/reembed.py; functions in
-- sql/functions/reembed.sql, reembed.sql): new vectors are staged beside the live ones, one batch
-- per transaction, embedded BEFORE each transaction opens; reembed_switch_v1 swaps them
-- in. One job row (id = 1) says which model the staged vectors belong to.

-- name: reembed_state
-- The re-embed in progress, for `status`: its target model, when it started, how many
-- vectors are staged and how many rows still lack one. No row = none in progress.
SELECT j.target_fingerprint, j.model, j.started_at,
       (SELECT count(*) FROM amrita_memory.reembed_staging s
         WHERE s.fingerprint = j.target_fingerprint)::integer AS staged,
       amrita_memory.reembed_pending_count_v1(j.target_fingerprint) AS pending
  FROM amrita_memory.reembed_job j;

-- name: reembed_pending_count
-- Memory and knowledge rows without a valid staged vector of fingerprint $1.
SELECT amrita_memory.reembed_pending_count_v1($1) AS pending;

-- name: reembed_job_target
-- The model an unfinished job was staging toward, row-locked so that two runs starting
-- together register one after the other (NULL = no job).
SELECT target_fingerprint
  FROM amrita_memory.reembed_job
 WHERE id = 1
   FOR UPDATE;

-- name: reembed_discard_staging
-- Drop every staged vector: they belong to a job toward another model.
DELETE FROM amrita_memory.reembed_staging;

-- name: reembed_register_job
-- Register (or take over) the job toward fingerprint $1 (protocol $2, model $3, base URL
-- $4) at $5; started_at stays that of the first run, so a resumed job keeps its age.
INSERT INTO amrita_memory.reembed_job
       (id, target_fingerprint, protocol, model, base_url, started_at, updated_at)
VALUES (1, $1, $2, $3, $4, $5, $5)
ON CONFLICT (id) DO UPDATE
   SET target_fingerprint = EXCLUDED.target_fingerprint, protocol = EXCLUDED.protocol,
       model = EXCLUDED.model, base_url = EXCLUDED.base_url, updated_at = EXCLUDED.updated_at;

-- name: reembed_staged_count
-- Vectors of fingerprint $1 already staged (by an interrupted run, then reused).
SELECT count(*)::integer AS staged
  FROM amrita_memory.reembed_staging
 WHERE fingerprint = $1;

-- name: reembed_pending_memories
-- Up to $3 memories after position $2 ('partition_key/id', '' = the start; primary key
-- order) without a valid staged vector of fingerprint $1, with the text to embed and
-- each one's position (next_after) to continue from.
SELECT row_id, body, updated_at, next_after
  FROM amrita_memory.reembed_pending_memories_v1($1, $2, $3);

-- name: reembed_pending_knowledge
-- Up to $3 knowledge entries after kid $2 without a valid staged vector of fingerprint
-- $1, with the text to embed: the summary, what a knowledge write embeds and a
-- knowledge search matches (reembed_pending_knowledge_v2, sql/functions/knowledge.sql).
SELECT row_id, body, updated_at, row_id AS next_after
  FROM amrita_memory.reembed_pending_knowledge_v2($1, $2, $3);

-- name: reembed_stage_vector
-- Stage the new vector $4 (fingerprint $3) of row $2 of kind $1, computed from the text
-- as of $5 (the row's updated_at: an edit after that makes the row pending again).
INSERT INTO amrita_memory.reembed_staging (kind, row_id, fingerprint, embedding, source_updated_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (kind, row_id) DO UPDATE
   SET fingerprint = EXCLUDED.fingerprint, embedding = EXCLUDED.embedding,
       source_updated_at = EXCLUDED.source_updated_at;

-- name: reembed_touch_job
-- The job made progress (its updated_at shows in `status` that it is alive).
UPDATE amrita_memory.reembed_job
   SET updated_at = now()
 WHERE id = 1;

-- name: reembed_switch
-- Swap the staged vectors in and record the model ($1 fingerprint, $2 protocol, $3
-- model, $4 base URL, $5 dimension when nothing is staged, $6 now) unless rows are still
-- pending: then nothing changes and `pending` says how many (stage them, try again).
-- v2 locks memory and knowledge first in a mode row-locking edits wait for (no deadlock).
SELECT switched, pending, memories, knowledge, dim
  FROM amrita_memory.reembed_switch_v2($1, $2, $3, $4, $5, $6);
