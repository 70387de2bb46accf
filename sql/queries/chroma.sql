-- Statements of the chroma vector backend (amrita_memory_pg/storage/chroma/). PostgreSQL
-- stays the record of truth: Chroma proposes candidates, and the rows, their filters and
-- their metadata come from here, so both backends filter with the same function
-- (memory_matches_v2, inlined by the planner) as search_memories_v4.

-- name: chroma_candidate_rows
-- Rows of partition $1 that pass the search filters ($2 importance min, $3 max, $4 scope,
-- $5 any of tags, $6 category; NULL = no filter), at most $7: when no more than the
-- candidate count exist, every one is scored exactly and Chroma is not asked.
SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
       m.source, m.author, m.created_at, m.updated_at
  FROM amrita_memory.memory m
 WHERE m.partition_key = $1
   AND amrita_memory.memory_matches_v2(m.importance, m.scope, m.tags, m.category,
                                       $2, $3, $4, $5, $6)
 LIMIT $7;

-- name: chroma_matching_rows
-- Chroma's nearest ids ($7) that still exist in partition $1 and pass the same filters
-- ($2-$6): its metadata can lag behind the table (the sweep demotes in SQL only).
SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
       m.source, m.author, m.created_at, m.updated_at
  FROM amrita_memory.memory m
 WHERE m.partition_key = $1
   AND amrita_memory.memory_matches_v2(m.importance, m.scope, m.tags, m.category,
                                       $2, $3, $4, $5, $6)
   AND m.id = ANY($7::text[]);

-- name: chroma_keyword_rows
-- The keyword side of the chroma backend's keyword and hybrid modes (the vectors are in
-- Chroma, the tokens here): the $3 rows of partition $1 with the best BM25 for the search
-- tokens $2 (only rows sharing a token), filters $4-$8 as above, $9 now. BM25 over the
-- whole filtered partition, exactly as search_memories_v4's exact path computes it.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at, keyword_score
  FROM amrita_memory.score_memories_v1($1, NULL, $2, 'keyword', $3, $9, false, 30, 1, 0.05,
                                       $4, $5, $6, $7, $8, 'rrf', 60, 0.5, NULL);

-- name: chroma_rebuild_page
-- One page of a rebuild of the collection: the vectors and the metadata Chroma keeps
-- (vector_metadata), $3 rows after ($1 partition, $2 id) in the primary key's order
-- (keyset on pk_memory, so every page costs the same however far the walk has come).
-- Every partition: a rebuild copies the whole table.
SELECT id, partition_key, scope, importance, created_at, embedding
  FROM amrita_memory.memory
 WHERE (partition_key, id) > ($1, $2)
 ORDER BY partition_key, id
 LIMIT $3;

-- name: chroma_all_ids
-- Every memory id with its partition, to compare with the ids the collection holds after
-- a rebuild (rows inserted or deleted while their page was being copied).
SELECT partition_key, id
  FROM amrita_memory.memory;

-- name: chroma_rows_by_id
-- The rows ($1[i] partition, $2[i] id) with what Chroma keeps: the ones a rebuild found
-- missing from the collection, each found by its primary key. Rows deleted meanwhile
-- are simply absent.
SELECT m.id, m.partition_key, m.scope, m.importance, m.created_at, m.embedding
  FROM unnest($1::text[], $2::text[]) AS k(partition_key, id)
  JOIN amrita_memory.memory m ON m.partition_key = k.partition_key AND m.id = k.id;

-- name: chroma_write_gate
-- Taken (shared, until commit) by every write transaction that also writes to Chroma,
-- before its Chroma call: a rebuild's last pass holds the same key exclusively, so it
-- compares the two sides only when no transaction has touched Chroma without having
-- committed or rolled back yet.
SELECT pg_advisory_xact_lock_shared(hashtextextended('amrita_memory.chroma_index', 0));

-- name: chroma_rebuild_gate
-- A rebuild's last pass (compare ids, fix the differences) runs in a transaction holding
-- this key exclusively: it waits for the writes already in flight and holds new ones
-- (chroma_write_gate) until it commits.
SELECT pg_advisory_xact_lock(hashtextextended('amrita_memory.chroma_index', 0));
