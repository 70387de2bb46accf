-- Per-partition HNSW indexes (amrita_memory_pg/maintenance/ann.py). DDL takes no
-- parameters, so the statements that build or drop an index are SELECTs that return the
-- DDL text, every identifier and literal quoted by format() (%I, %L, %s of an integer);
-- the caller executes that text outside any transaction (CONCURRENTLY requires it).

-- name: ann_partition_sizes
-- Rows per (partition, vector dimension): which partitions are large enough for an index
-- of their own (a dimension of its own per model, during a re-embed).
SELECT partition_key, vector_dims(embedding) AS dim, count(*)::integer AS n
  FROM amrita_memory.memory
 GROUP BY partition_key, vector_dims(embedding);

-- name: ann_indexes
-- The per-partition indexes recorded (search_memories_v8 consults this table); stale: the
-- index is not over halfvec (built by 0.14.1's maintenance during a rolling upgrade, over
-- embedding::vector(n)): the search functions' expression cannot use it, so it is built
-- again.
SELECT a.partition_key, a.dim, a.index_name,
       coalesce(pg_get_indexdef(to_regclass(format('amrita_memory.%I', a.index_name)))
                NOT LIKE '%halfvec_l2_ops%', false) AS stale
  FROM amrita_memory.ann_index a;

-- name: ann_drop_index_ddl
-- DROP INDEX CONCURRENTLY of index $1 in our schema (also clears an INVALID index that a
-- failed concurrent build left behind).
SELECT format('DROP INDEX CONCURRENTLY IF EXISTS amrita_memory.%I', $1::text) AS ddl;

-- name: ann_create_index_ddl
-- CREATE INDEX CONCURRENTLY IF NOT EXISTS $1 (another process building it meanwhile: a
-- no-op): HNSW (m = $3, ef_construction = $4) over the half-precision vectors of
-- partition $5 with dimension $2 only. The predicate names the partition and the
-- dimension so that search_vector_ann_v5's query (same literals, same expression) can use
-- it, and the ::halfvec($2) cast never meets a vector of another model. halfvec_l2_ops:
-- the column is halfvec, the search orders by L2 (<->); HNSW takes halfvec up to 4,000
-- dimensions (vector: 2,000).
SELECT format(
           'CREATE INDEX CONCURRENTLY IF NOT EXISTS %I ON amrita_memory.memory USING hnsw '
           '((embedding::halfvec(%s)) halfvec_l2_ops) WITH (m = %s, ef_construction = %s) '
           'WHERE partition_key = %L AND vector_dims(embedding) = %s',
           $1::text, $2::integer, $3::integer, $4::integer, $5::text, $2::integer) AS ddl;

-- name: ann_forget_index
-- Remove the record of the index of partition $1, dimension $2 (after dropping it).
DELETE FROM amrita_memory.ann_index
 WHERE partition_key = $1 AND dim = $2;

-- name: ann_record_index
-- Record index $3 of partition $1, dimension $2, built over $4 rows (a concurrent run
-- that recorded it first wins).
INSERT INTO amrita_memory.ann_index (partition_key, dim, index_name, rows_at_build)
VALUES ($1, $2, $3, $4)
ON CONFLICT (partition_key, dim) DO NOTHING;

-- name: keyword_indexes
-- The per-partition keyword (GIN) indexes that exist (ix_memory_kw_*), valid or not.
SELECT c.relname::text AS index_name
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'amrita_memory' AND c.relkind = 'i' AND c.relname LIKE 'ix\_memory\_kw\_%';

-- name: keyword_index_ddl
-- CREATE INDEX CONCURRENTLY IF NOT EXISTS $1: GIN over the search tokens of partition $2 only, for the
-- keyword candidates of search_memories_v6 on a partition with its own HNSW index
-- (there is no such index over the whole table).
SELECT format(
           'CREATE INDEX CONCURRENTLY IF NOT EXISTS %I ON amrita_memory.memory USING gin (search_tokens) '
           'WHERE partition_key = %L',
           $1::text, $2::text) AS ddl;

-- name: index_state
-- Index $1 of our schema: whether it is valid, and whether a CREATE INDEX (CONCURRENTLY)
-- of it runs now in any session (no row: there is no such index). An index being built
-- is INVALID until done and must not be taken for the leftover of a failed build when two
-- processes maintain the indexes at once.
SELECT i.indisvalid AS valid,
       EXISTS (SELECT 1 FROM pg_stat_progress_create_index p
                WHERE p.index_relid = c.oid) AS building
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_index i ON i.indexrelid = c.oid
 WHERE n.nspname = 'amrita_memory' AND c.relname = $1;

-- name: block_indexes
-- The per-partition block indexes that exist (ix_memory_top_*), valid or not: the memory
-- block's candidates of global and the large partitions (block_candidates_v1).
SELECT c.relname::text AS index_name
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'amrita_memory' AND c.relkind = 'i' AND c.relname LIKE 'ix\_memory\_top\_%';

-- name: block_index_ddl
-- CREATE INDEX CONCURRENTLY IF NOT EXISTS $1: btree in the memory block's order
-- (importance desc, updated_at desc, id) over the rows of partition $2 only, which
-- block_candidates_v1 reads through a statement planned for that partition.
SELECT format(
           'CREATE INDEX CONCURRENTLY IF NOT EXISTS %I ON amrita_memory.memory '
           '(importance DESC, updated_at DESC, id) WHERE partition_key = %L',
           $1::text, $2::text) AS ddl;
