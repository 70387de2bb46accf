-- L2 memory statements. Vectors are computed by the caller before any of these runs (no
-- lock is ever held across an embedding request); every statement names the partition,
-- the distribution column under Citus (docs/scaling.md), so each stays single-shard.

-- name: insert_memory
-- Insert under the per-partition cap: $1 partition, $2 scope, $3 content, $4 tags,
-- $5 importance (1-10), $6 category, $7 source, $8 author, $9 embedding, $10 the
-- writer's fingerprint, $11 now, $12 cap, $13-$15 protocol/model/base_url (recorded only
-- by the store's first write). id is NULL when the partition is full (rows_before = the
-- count). SQLSTATE AMF01: another embedding model; AMF03: another dimension.
SELECT id, rows_before
  FROM amrita_memory.insert_memory_v2($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);

-- name: update_memory
-- Change some fields of one memory of partition $1, id $2: $3 content (only together with
-- its new embedding $8), $4 tags, $5 importance, $6 whether $7 replaces the category,
-- $9 the writer's fingerprint, $10 now; NULL keeps a field. No row when the id is not in
-- the partition. SQLSTATE AMF01 / AMF03 as for insert_memory, 22023 for content without
-- its embedding.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at
  FROM amrita_memory.update_memory_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- name: search_memories
-- The top $3 of partition $1 for query vector $2 by decay score at $4 ($5 decay on,
-- $6 half-life base days, $7 importance boost, $8 score floor; filters $9-$12:
-- importance min/max, scope, any of tags; $13 HNSW candidates for a large partition).
-- distance = squared L2; decay_score = 1/(1+distance) x max(0.5^(age/half_life), floor).
-- SQLSTATE AMF03 when the query's dimension is not the store's.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at, distance, decay_score, age_days
  FROM amrita_memory.search_memories_v3($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);
