-- Import from another installation (amrita_memory_pg/maintenance/legacy_import.py):
-- memories through import_memory_v2 (cap lock, kept ids and vectors), memos directly.

-- name: import_memories
-- Merge one batch of memories, import_memory_v2 per row in array order: parallel arrays
-- $1 ids, $2 partitions, $3 scopes, $4 contents, $5 tags (each row's tags joined by
-- U+001F, '' = none), $6 importance, $7 created_at, $8 embeddings in pgvector's text
-- form (asyncpg cannot send vector[]; NULL only for an existing row whose content is kept); then $9 fingerprint, $10 now, $11 cap, $12 replace
-- existing ids, $13-$15 protocol/model/base_url (recorded only by the store's first
-- vector). One row per input row, in order: ord (1-based) and outcome (inserted |
-- present | unchanged | replaced | full). SQLSTATE AMF01 / AMF03 as for insert_memory.
SELECT b.ord, i.outcome, i.rows_before
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[],
              $7::timestamptz[], $8::text[])
       WITH ORDINALITY AS b(id, partition_key, scope, content, tags, importance, created_at,
                            embedding, ord)
 CROSS JOIN LATERAL amrita_memory.import_memory_v2(
           b.id, b.partition_key, b.scope, b.content, string_to_array(b.tags, chr(31)),
           b.importance, b.created_at, b.embedding::vector, $9, $10, $11, $12, $13, $14, $15) AS i
 ORDER BY b.ord;

-- name: import_existing_memories
-- Which of the (partition, id) pairs $1/$2 (parallel arrays) are already stored, with
-- what the import compares (content decides whether a vector is needed).
SELECT m.partition_key, m.id, m.content
  FROM amrita_memory.memory m
  JOIN unnest($1::text[], $2::text[]) AS k(partition_key, id)
    ON m.partition_key = k.partition_key AND m.id = k.id;

-- name: import_partition_counts
-- Memories per partition for the partitions $1 (the cap planning of an import).
SELECT m.partition_key, count(*)::integer AS n
  FROM amrita_memory.memory m
 WHERE m.partition_key = ANY($1::text[])
 GROUP BY m.partition_key;

-- name: import_existing_memos
-- The stored memos of the partitions $1.
SELECT partition_key, content
  FROM amrita_memory.memo
 WHERE partition_key = ANY($1::text[]);

-- name: import_memo_insert
-- A memo of another installation for a partition that has none: $1 partition,
-- $2 content, $3 version, $4 updated_at. No row when the partition got one meanwhile.
INSERT INTO amrita_memory.memo (partition_key, content, version, updated_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (partition_key) DO NOTHING
RETURNING partition_key;

-- name: import_memo_replace
-- --on-conflict replace: overwrite memo $1 with $2 (version + 1, updated_at $3) when it
-- differs; no row when it already says exactly that.
UPDATE amrita_memory.memo
   SET content = $2, version = version + 1, updated_at = $3
 WHERE partition_key = $1 AND content IS DISTINCT FROM $2
RETURNING partition_key;

-- name: import_memory_row
-- The memory just imported (partition $1, id $2), read in the import's transaction to
-- hand it to a vector backend with write hooks (chroma).
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at
  FROM amrita_memory.memory
 WHERE partition_key = $1 AND id = $2;

-- name: import_l3_state_insert
-- The old plugin's L3 state as a target's row when it has none: $1 target, $2 penalty,
-- $3 runs, $4 last_run_end, $5 last_summary, $6 heat (JSON), $7 now. No row when the
-- target already has state (kept).
INSERT INTO amrita_memory.l3_state (target_key, penalty, runs, last_run_end, last_summary,
                                    heat, updated_at)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)
ON CONFLICT (target_key) DO NOTHING
RETURNING target_key;

-- name: import_l3_state_replace
-- --on-conflict replace: the old state over a target's row (same arguments as
-- import_l3_state_insert); no row when it already holds exactly these values.
UPDATE amrita_memory.l3_state
   SET penalty = $2, runs = $3, last_run_end = $4, last_summary = $5, heat = $6::jsonb,
       updated_at = $7
 WHERE target_key = $1
   AND (penalty, runs, last_run_end, last_summary, heat)
       IS DISTINCT FROM ($2, $3, $4, $5, $6::jsonb)
RETURNING target_key;

-- name: import_l3_state_exists
-- Whether target $1 already has a state row.
SELECT EXISTS (SELECT 1 FROM amrita_memory.l3_state WHERE target_key = $1) AS found;

-- name: import_pending_message
-- A proactive message the old plugin had queued for target $1 (content $2, queued at
-- $3), pending again here; nothing when target $1 already has this message from that
-- time (delivered or not), so a second import adds nothing. Returns the new id.
INSERT INTO amrita_memory.pending_message (target_key, cycle_id, content, created_at)
SELECT $1, NULL, $2, $3
 WHERE NOT EXISTS (SELECT 1 FROM amrita_memory.pending_message p
                    WHERE p.target_key = $1 AND p.content = $2 AND p.created_at = $3)
RETURNING id;

-- name: set_imported_memory_tokens
-- The search tokens $4 (domain/tokens.py) of memory $2 of partition $1, just imported or
-- replaced with content $3 in this transaction: import_memory_v2 takes no tokens,
-- so without this a new row waits for the backfill and a replaced row keeps
-- the tokens of its old text. Guarded by the content, like set_memory_tokens.
UPDATE amrita_memory.memory
   SET search_tokens = array_to_tsvector($4::text[])
 WHERE partition_key = $1 AND id = $2 AND content = $3;

-- name: import_suggestion_exists
-- Whether the old plugin's knowledge suggestion (author $1, title $2, body $3, queued at
-- $4) is already in the queue, handled or not: a second import queues it again never.
SELECT EXISTS (SELECT 1 FROM amrita_memory.knowledge_suggestion s
                WHERE s.author_id = $1 AND s.title = $2 AND s.body = $3
                  AND s.created_at = $4) AS found;

-- name: import_l3_state_same
-- Whether target $1's state row holds exactly the old state (arguments $2-$6 of
-- import_l3_state_insert): a kept row is reported identical or different.
SELECT EXISTS (SELECT 1 FROM amrita_memory.l3_state
                WHERE target_key = $1
                  AND (penalty, runs, last_run_end, last_summary, heat)
                      IS NOT DISTINCT FROM ($2, $3, $4, $5, $6::jsonb)) AS same;

-- name: import_knowledge_suggestion
-- The old plugin's knowledge suggestion into the queue: knowledge_suggest's arguments
-- ($1 action … $7 author, $8 bound, $9 rate limit (0 here), $10 window, $11 when queued).
SELECT status, id, pending
  FROM amrita_memory.knowledge_suggest_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);
