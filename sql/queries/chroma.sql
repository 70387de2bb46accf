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
