-- L3 consolidation, version 1: the deterministic pre-pass of a cycle.
-- Released files are never edited: a change is a new file installed by a new migration.

-- Near-duplicate pairs inside one partition: every pair (a, b), a.id < b.id, whose cosine
-- similarity is at least p_min_similarity, i.e. cosine distance (pgvector <=>, 1 - cos)
-- at most 1 - p_min_similarity. A self-join on the partition: O(n^2) distance
-- evaluations, fine for the partitions the per-partition cap keeps small (100 rows =
-- 4,950 pairs, about a millisecond); the partition key filters both sides, so the join
-- stays on one shard under Citus. Pairs with another dimension than the store's are
-- impossible (every write is checked), so the operator never raises. Clusters are the
-- connected components of these pairs, formed by the caller (union-find), so the
-- threshold the LLM passes can differ per call without another function.
--   psql> SELECT * FROM amrita_memory.duplicate_pairs_v1('QQPlatform_Private_10001', 0.85);
CREATE OR REPLACE FUNCTION amrita_memory.duplicate_pairs_v1(
    p_partition_key text, p_min_similarity double precision)
RETURNS TABLE (a_id text, b_id text, similarity double precision)
LANGUAGE sql STABLE
AS $$
    SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding)
      FROM amrita_memory.memory AS a
      JOIN amrita_memory.memory AS b
        ON b.partition_key = a.partition_key AND b.id > a.id
     WHERE a.partition_key = p_partition_key
       AND (a.embedding <=> b.embedding) <= 1 - p_min_similarity
     ORDER BY a.id, b.id
$$;

COMMENT ON FUNCTION amrita_memory.duplicate_pairs_v1(text, double precision) IS
    'L3 pre-pass: pairs of memories of one partition with cosine similarity >= p_min_similarity (a.id < b.id); the caller unions them into near-duplicate clusters.';
