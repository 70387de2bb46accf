-- L3 consolidation: the deterministic parts of a cycle, before and beside the LLM loop.


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


-- Knowledge distillation: which memories of a partition the L3 loop should consider for
-- the global knowledge base (the reference's 知识沉淀).
--
-- A memory t of partition p_partition_key is a candidate when all of these hold:
--   1. it is general knowledge by the store's own evidence: its category is 'knowledge',
--      OR memories of category 'knowledge' near-duplicating it (cosine similarity >=
--      p_min_similarity) exist in at least p_min_partitions OTHER partitions (the same
--      fact learnt from several users or groups);
--   2. the knowledge base does not hold it yet: no knowledge entry whose vector (of
--      title + summary) has cosine similarity >= p_min_similarity to it;
--   3. the loop has not reviewed it yet: it changed (updated_at) after the start of the
--      partition's last successful, not dry-run cycle — a cycle that was shown it and
--      decided either way is not asked again; a memory written or edited since is.
--      A partition that never had a successful cycle has all its memories reviewed once.
-- Vectors of another dimension (a re-embed in progress) are never compared.
--
-- Cost: the target side is one partition (capped, ~100 rows); the other side reads only
-- rows of category 'knowledge' through the partial index ix_memory_knowledge, and the
-- knowledge table is small. So one call is
-- (partition rows) x (knowledge-category rows + knowledge entries) distance
-- evaluations, once per cycle. Under Citus the other-partition side is a multi-shard read
-- (docs/scaling.md): the function is not delegated to one shard.
--
-- Rows: the candidate, how many other partitions hold it, ordered by that count (strongest
-- evidence first), then importance (high first), then (created_at, id).
--   psql> SELECT * FROM amrita_memory.knowledge_candidates_v1('QQPlatform_Private_10001', 0.85, 2);
CREATE OR REPLACE FUNCTION amrita_memory.knowledge_candidates_v1(
    p_partition_key text, p_min_similarity double precision, p_min_partitions integer)
RETURNS TABLE (id text, content text, importance smallint, category text, partitions integer)
LANGUAGE sql STABLE
AS $$
    WITH reviewed AS (
        SELECT c.started_at
          FROM amrita_memory.consolidation_cycle AS c
         WHERE c.target_key = p_partition_key AND c.ok AND NOT c.dry_run
         ORDER BY c.id DESC
         LIMIT 1
    ), fresh AS MATERIALIZED (
        SELECT t.id, t.content, t.importance, t.category, t.created_at, t.embedding
          FROM amrita_memory.memory AS t
         WHERE t.partition_key = p_partition_key
           AND t.updated_at > coalesce((SELECT started_at FROM reviewed), '-infinity')
           AND NOT EXISTS (
                SELECT 1
                  FROM amrita_memory.knowledge AS k
                 WHERE vector_dims(k.embedding) = vector_dims(t.embedding)
                   AND (k.embedding <=> t.embedding) <= 1 - p_min_similarity)
    ), others AS MATERIALIZED (
        -- read once (the partial index), then compared in memory with every fresh row
        SELECT o.partition_key, o.embedding
          FROM amrita_memory.memory AS o
         WHERE o.category = 'knowledge' AND o.partition_key <> p_partition_key
           AND EXISTS (SELECT 1 FROM fresh)
    ), counted AS (
        SELECT f.id, count(DISTINCT o.partition_key)::integer AS partitions
          FROM fresh AS f
          JOIN others AS o
            ON vector_dims(o.embedding) = vector_dims(f.embedding)
           AND (o.embedding <=> f.embedding) <= 1 - p_min_similarity
         GROUP BY f.id
    )
    SELECT f.id, f.content, f.importance, f.category, coalesce(c.partitions, 0)
      FROM fresh AS f
      LEFT JOIN counted AS c ON c.id = f.id
     WHERE f.category = 'knowledge' OR coalesce(c.partitions, 0) >= p_min_partitions
     ORDER BY coalesce(c.partitions, 0) DESC, f.importance DESC, f.created_at, f.id
$$;
COMMENT ON FUNCTION amrita_memory.knowledge_candidates_v1(text, double precision, integer) IS
    'L3 pre-pass: memories of one partition to consider for the global knowledge base (category knowledge, or a knowledge fact of >= p_min_partitions other partitions), not in the knowledge base yet, changed since the last successful cycle.';
