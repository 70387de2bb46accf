-- Statements of the chroma vector backend (amrita_memory_pg/storage/chroma/). PostgreSQL
-- stays the record of truth: Chroma proposes candidates, and the rows, their filters and
-- their metadata come from here, so both backends filter with the same function
-- (memory_matches_v1, inlined by the planner) as search_memories_v3.

-- name: chroma_candidate_rows
-- Rows of partition $1 that pass the search filters ($2 importance min, $3 max, $4 scope,
-- $5 any of tags; NULL = no filter), at most $6: when no more than the candidate count
-- exist, every one is scored exactly and Chroma is not asked.
SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
       m.source, m.author, m.created_at, m.updated_at
  FROM amrita_memory.memory m
 WHERE m.partition_key = $1
   AND amrita_memory.memory_matches_v1(m.importance, m.scope, m.tags, $2, $3, $4, $5)
 LIMIT $6;

-- name: chroma_matching_rows
-- Chroma's nearest ids ($6) that still exist in partition $1 and pass the same filters
-- ($2-$5): its metadata can lag behind the table (the sweep demotes in SQL only).
SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
       m.source, m.author, m.created_at, m.updated_at
  FROM amrita_memory.memory m
 WHERE m.partition_key = $1
   AND amrita_memory.memory_matches_v1(m.importance, m.scope, m.tags, $2, $3, $4, $5)
   AND m.id = ANY($6::text[]);

-- name: chroma_rebuild_page
-- One page of a rebuild of the collection: the vectors and the metadata Chroma keeps
-- (vector_metadata), $2 rows after id $1 in id order (keyset on ix_memory_id, so every
-- page costs the same however far the walk has come). Every partition: a rebuild
-- copies the whole table.
SELECT id, partition_key, scope, importance, created_at, embedding
  FROM amrita_memory.memory
 WHERE id > $1
 ORDER BY id
 LIMIT $2;

-- name: chroma_all_ids
-- Every memory id, to compare with the ids the collection holds after a rebuild (rows
-- inserted or deleted while their page was being copied).
SELECT id
  FROM amrita_memory.memory;

-- name: chroma_rows_by_id
-- The rows of ids $1 (any partition) with what Chroma keeps: the ones a rebuild found
-- missing from the collection. Ids deleted meanwhile are simply absent.
SELECT id, partition_key, scope, importance, created_at, embedding
  FROM amrita_memory.memory
 WHERE id = ANY($1::text[]);
