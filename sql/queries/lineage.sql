-- Lineage, forgetting, erasure (amrita_memory_pg/storage/lineage.py, one typed wrapper
-- each). The functions are sql/functions/lineage.sql; its header says what a lineage
-- row, a withheld row's task and a ledger row mean.

-- name: lineage_record
-- Record edges in the writer's transaction: derived (kinds $1, keys $2, ids $3) made from
-- sources (kinds $4, keys $5, ids $6), pairwise, by actor kind $7 in cycle $8 at $9. An
-- edge recorded twice stays one row.
INSERT INTO amrita_memory.lineage AS l
       (derived_kind, derived_key, derived_id, source_kind, source_key, source_id,
        made_by, cycle_id, made_at)
SELECT e.dk, e.dkey, e.did, e.sk, e.skey, e.sid, $7::text, $8::bigint, $9::timestamptz
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
       AS e(dk, dkey, did, sk, skey, sid)
ON CONFLICT DO NOTHING;

-- name: lineage_candidates
-- The memories of partition $1 with their texts: what a text the loop writes may have been
-- made from (domain/lineage.py infers which, by shared words).
SELECT id, content
  FROM amrita_memory.memory
 WHERE partition_key = $1;

-- name: lineage_carry
-- An extraction replaced memory $2[i] of partition $1 by $3[i] with the same text: the
-- new row was made from what the old one was, and what was made from the old one is now
-- made from the new one. Returns the edges moved.
WITH pairs AS (
    SELECT o, n FROM unnest($2::text[], $3::text[]) AS p(o, n)
), copied AS (
    INSERT INTO amrita_memory.lineage AS l
           (derived_kind, derived_key, derived_id, source_kind, source_key, source_id,
            made_by, cycle_id, made_at)
    SELECT l.derived_kind, l.derived_key, p.n, l.source_kind, l.source_key, l.source_id,
           l.made_by, l.cycle_id, l.made_at
      FROM amrita_memory.lineage l JOIN pairs p ON l.derived_id = p.o
     WHERE l.derived_kind = 'memory' AND l.derived_key = $1
    ON CONFLICT DO NOTHING
    RETURNING 1
), moved AS (
    UPDATE amrita_memory.lineage l
       SET source_id = p.n
      FROM pairs p
     WHERE l.source_kind = 'memory' AND l.source_key = $1 AND l.source_id = p.o
       AND NOT EXISTS (SELECT 1 FROM amrita_memory.lineage x
                        WHERE x.derived_key = l.derived_key AND x.derived_kind = l.derived_kind
                          AND x.derived_id = l.derived_id AND x.source_kind = 'memory'
                          AND x.source_key = $1 AND x.source_id = p.n)
    RETURNING 1
)
SELECT (SELECT count(*) FROM copied) + (SELECT count(*) FROM moved) AS moved;

-- name: lineage_made_from
-- What row ($1 kind, $2 key, $3 id) was made from, transitively (lineage_made_from_v1).
SELECT depth, kind, row_key, row_id, made_by, cycle_id, made_at, present, body
  FROM amrita_memory.lineage_made_from_v1($1, $2, $3);

-- name: lineage_used_by
-- What was made from row ($1 kind, $2 key, $3 id), transitively (lineage_used_by_v1).
SELECT depth, kind, row_key, row_id, made_by, cycle_id, made_at, present, body
  FROM amrita_memory.lineage_used_by_v1($1, $2, $3);

-- name: lineage_counts
-- For memories $2 of partition $1: how many rows each was made from and how many were
-- made from it (direct edges, self-edges not counted) — a listing's marks.
SELECT i.id,
       (SELECT count(*) FROM amrita_memory.lineage l
         WHERE l.derived_key = $1 AND l.derived_kind = 'memory' AND l.derived_id = i.id
           AND NOT (l.source_kind = 'memory' AND l.source_key = $1 AND l.source_id = i.id))::integer
           AS made_from,
       (SELECT count(*) FROM amrita_memory.lineage l
         WHERE l.source_key = $1 AND l.source_kind = 'memory' AND l.source_id = i.id
           AND NOT (l.derived_kind = 'memory' AND l.derived_key = $1 AND l.derived_id = i.id))::integer
           AS used_by
  FROM unnest($2::text[]) AS i(id);

-- name: forget_memories
-- Forget memories $2 of partition $1 with their cascade and every trace, with the
-- request's own chat lines ($3 session keys, $4 ids); by $5 at $6; $7 dry run
-- (forget_memories_v1: the rows reached, then the rows written per table).
SELECT action, kind, row_key, row_id, body, n
  FROM amrita_memory.forget_memories_v1($1, $2::text[], $3::text[], $4::bigint[], $5, $6, $7);

-- name: forget_cascade
-- The cascade of sources $1 (JSON [{kind, key, id}]) in mode $2 (delete | change), its
-- tasks telling the loop $3 (JSON [{was, now}]), at $4, $5 dry run. Not strict.
SELECT action, kind, row_key, row_id, body, n
  FROM amrita_memory.forget_cascade_v1($1::jsonb, $2, false, NULL, $3::jsonb, $4, $5);

-- name: erase_partition
-- Erase partition $1 by $2 at $3 ($4 dry run), recording the ledger: the receipt, the
-- ledger id, the memories that left the table.
SELECT action, kind, row_id, n
  FROM amrita_memory.erase_partition_v1($1, $2, $3, $4, true);

-- name: erasure_ledger
-- The ledger, newest first ($1 rows at most): what was forgotten or erased, when, by
-- whom, how many rows; never content.
SELECT id, at, kind, subject, cardinality(memory_ids)::integer AS memories,
       cardinality(chat_line_ids)::integer AS chat_lines, requested_by, counts
  FROM amrita_memory.erasure_ledger
 ORDER BY id DESC
 LIMIT $1;

-- name: erasure_ledger_rows
-- Every ledger row as JSON (what a restore carries over the load, and re-inserts).
SELECT coalesce(jsonb_agg(to_jsonb(e) ORDER BY e.id), '[]'::jsonb) AS rows
  FROM amrita_memory.erasure_ledger e;

-- name: erasure_ledger_merge
-- Put ledger rows $1 (JSON, as erasure_ledger_rows gave them) back after a restore
-- loaded an older ledger (or none): a row is the same entry when its time, kind and
-- subject are; those missing are added, oldest first. Returns the rows added.
WITH incoming AS (
    -- the same entry may come twice (the store's and the newest backup's): once
    SELECT DISTINCT ON (i.at, i.kind, i.subject) i.*
      FROM jsonb_populate_recordset(NULL::amrita_memory.erasure_ledger, $1::jsonb) i
     ORDER BY i.at, i.kind, i.subject, i.id
), added AS (
    INSERT INTO amrita_memory.erasure_ledger
           (at, kind, subject, memory_ids, chat_line_ids, requested_by, counts)
    SELECT i.at, i.kind, i.subject, i.memory_ids, i.chat_line_ids, i.requested_by, i.counts
      FROM incoming i
     WHERE NOT EXISTS (SELECT 1 FROM amrita_memory.erasure_ledger e
                        WHERE e.at = i.at AND e.kind = i.kind AND e.subject = i.subject)
     ORDER BY i.at, i.id
    RETURNING 1
)
SELECT count(*)::integer AS added FROM added;

-- name: erasure_ledger_apply
-- Apply the ledger to what a restore loaded, at $1 (erasure_ledger_apply_v1): one row per
-- entry that removed something.
SELECT ledger_id, kind, removed
  FROM amrita_memory.erasure_ledger_apply_v1($1);

-- name: rederive_claim
-- The withheld rows waiting for partition $1's loop, claimed for cycle $2 at $3 (a claim
-- older than $4, from a cycle that died, is taken over), oldest first, at most $5.
UPDATE amrita_memory.rederive_task t
   SET claimed_by_cycle = $2, claimed_at = $3
 WHERE (t.partition_key, t.id) IN (
        SELECT x.partition_key, x.id FROM amrita_memory.rederive_task x
         WHERE x.partition_key = $1
           AND (x.claimed_by_cycle IS NULL OR x.claimed_by_cycle = $2 OR x.claimed_at < $4)
         ORDER BY x.id
         LIMIT $5
           FOR UPDATE SKIP LOCKED)
RETURNING t.id, t.kind, t.row_key, t.row_id, t.held, t.sources, t.about, t.reason, t.created_at;

-- name: rederive_release
-- A cycle that ended gives back the tasks it claimed and did not finish (cycle $1; a
-- cycle id is unique across partitions).
UPDATE amrita_memory.rederive_task
   SET claimed_by_cycle = NULL, claimed_at = NULL
 WHERE claimed_by_cycle = $1;

-- name: rederive_get
-- Task $2 of partition $1 (what the loop's tool acts on).
SELECT id, kind, row_key, row_id, held, sources, about, reason, created_at, claimed_by_cycle
  FROM amrita_memory.rederive_task
 WHERE partition_key = $1 AND id = $2;

-- name: rederive_done
-- Task $2 of partition $1 is done (written again or dropped): it goes, with the withheld
-- content it held. Returns its id.
DELETE FROM amrita_memory.rederive_task
 WHERE partition_key = $1 AND id = $2
RETURNING id;

-- name: rederive_pending
-- The tasks waiting (claimed or not) in partition $1, or every partition when $1 is
-- NULL, oldest first, at most $2.
SELECT partition_key, id, kind, row_key, row_id, held, sources, about, reason, created_at,
       claimed_by_cycle
  FROM amrita_memory.rederive_task
 WHERE $1::text IS NULL OR partition_key = $1
 ORDER BY created_at, id
 LIMIT $2;

-- name: rederive_count
-- How many tasks wait in partition $1 (get_context's hint).
SELECT count(*)::integer AS waiting
  FROM amrita_memory.rederive_task
 WHERE partition_key = $1;

-- name: source_texts
-- The texts of sources $1, $2, $3 (kinds, keys, ids; pairwise) that still exist, in order.
SELECT s.kind, s.key, s.id, amrita_memory.lineage_text_v1(s.kind, s.key, s.id) AS body
  FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS s(kind, key, id, n)
 ORDER BY s.n;
