-- The re-embed's walk over the memories, version 2 (migration 0056_walk_by_primary_key,
-- issue 24): the primary key's (partition_key, id) order. Released files are never edited.
--
-- Why. reembed_pending_v1 walked in id order, which had an index of its own
-- (ix_memory_id) beside the primary key: one more random B-tree leaf on every insert.
-- The walk needs an order, not that one; 0056 drops the index (sql/functions/sweep_v8.sql
-- has the measurement).
--
-- What. reembed_pending_memories_v1 returns reembed_pending_v1's memory rows in the
-- primary key's order, each with its position ('partition_key/id': the id is the last 32
-- characters) to pass back as p_after ('' = the start). The knowledge walk is unchanged.
-- reembed_pending_v1 stays: the previous release calls it during a rolling upgrade.

-- Up to p_limit memories after p_after without a valid staged vector of p_fingerprint.
--   psql> SELECT * FROM amrita_memory.reembed_pending_memories_v1('fp', '', 10);
CREATE OR REPLACE FUNCTION amrita_memory.reembed_pending_memories_v1(
    p_fingerprint text, p_after text, p_limit integer)
RETURNS TABLE (row_id text, body text, updated_at timestamptz, next_after text)
LANGUAGE sql STABLE
AS $$
    SELECT m.id, m.content, m.updated_at, m.partition_key || '/' || m.id
      FROM amrita_memory.memory m
     WHERE (m.partition_key, m.id) > (left(p_after, greatest(length(p_after) - 33, 0)),
                                      right(p_after, 32))
       AND NOT EXISTS (
             SELECT 1 FROM amrita_memory.reembed_staging s
              WHERE s.kind = 'memory' AND s.row_id = m.id
                AND s.fingerprint = p_fingerprint AND s.source_updated_at = m.updated_at)
     ORDER BY m.partition_key, m.id
     LIMIT p_limit
$$;
COMMENT ON FUNCTION amrita_memory.reembed_pending_memories_v1(text, text, integer) IS
'The re-embed''s next memories without a valid staged vector, in primary key order after position p_after (''partition_key/id'', '''' = the start); each row''s next_after is its position.';
