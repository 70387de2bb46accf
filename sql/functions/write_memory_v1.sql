-- The L2 write of the chat tool write_memory, version 1: idempotent within a window.
--
-- Why: a write whose reply was lost (a connection cut after the statement was sent, a
-- client-side timeout) has an unknown outcome, and the LLM is told to check and maybe
-- retry. A retry of the very same write must not make a second row. So, under the same
-- transaction-level advisory lock on the partition that insert_memory_v2 takes for the
-- cap, this first looks for a memory of the same partition, scope, content, author and
-- source, written with the same embedding model no more than p_dedup_seconds before
-- p_now; if there is one it is returned (duplicate = true) and nothing is written.
-- Otherwise insert_memory_v2 runs (model check, cap, insert) in the same transaction —
-- advisory locks are re-entrant, so the lock is held from the lookup to the commit and
-- two concurrent identical writes leave exactly one row. p_dedup_seconds <= 0 turns the
-- lookup off (a plain insert_memory_v2).
--
-- The lookup walks the (partition_key, created_at, id) index over at most the window's
-- rows of one partition. The row of another model never matches (its fingerprint
-- differs), so a writer on the wrong model still gets insert_memory_v2's refusal
-- (SQLSTATE AMF01 for another fingerprint, AMF03 for another dimension).
--
-- Returns one row: the memory's columns (id NULL when the partition is full), the
-- partition's count before the call, and whether the memory already existed.
CREATE OR REPLACE FUNCTION amrita_memory.write_memory_v1(
    p_partition text,
    p_scope text,
    p_content text,
    p_tags text[],
    p_importance integer,
    p_category text,
    p_source text,
    p_author text,
    p_embedding vector,
    p_fingerprint text,
    p_now timestamptz,
    p_cap integer,
    p_dedup_seconds float8,
    p_protocol text DEFAULT NULL,
    p_model text DEFAULT NULL,
    p_base_url text DEFAULT NULL)
RETURNS TABLE (
    id text,
    partition_key text,
    scope text,
    content text,
    tags text[],
    importance smallint,
    category text,
    source text,
    author text,
    created_at timestamptz,
    updated_at timestamptz,
    rows_before integer,
    duplicate boolean)
LANGUAGE plpgsql
AS $$
DECLARE
    v_id text;
    v_before integer;
BEGIN
    -- The same key as insert_memory_v2's cap lock: one lock covers lookup, cap and insert.
    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    IF p_dedup_seconds > 0 THEN
        SELECT m.id INTO v_id
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND m.created_at >= p_now - make_interval(secs => p_dedup_seconds)
           AND m.scope = p_scope
           AND m.content = p_content
           AND m.author IS NOT DISTINCT FROM p_author
           AND m.source = p_source
           AND m.embed_fingerprint = p_fingerprint
         ORDER BY m.created_at DESC, m.id DESC
         LIMIT 1;
        IF v_id IS NOT NULL THEN
            RETURN QUERY
            SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
                   m.source, m.author, m.created_at, m.updated_at,
                   (SELECT count(*)::integer FROM amrita_memory.memory c
                     WHERE c.partition_key = p_partition),
                   true
              FROM amrita_memory.memory m
             WHERE m.partition_key = p_partition AND m.id = v_id;
            RETURN;
        END IF;
    END IF;

    SELECT i.id, i.rows_before INTO v_id, v_before
      FROM amrita_memory.insert_memory_v2(
               p_partition, p_scope, p_content, p_tags, p_importance, p_category, p_source,
               p_author, p_embedding, p_fingerprint, p_now, p_cap, p_protocol, p_model,
               p_base_url) i;
    IF v_id IS NULL THEN
        RETURN QUERY SELECT NULL::text, p_partition, p_scope, p_content, p_tags,
                            p_importance::smallint, p_category, p_source, p_author,
                            p_now, p_now, v_before, false;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, v_before, false
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = v_id;
END
$$;

COMMENT ON FUNCTION amrita_memory.write_memory_v1(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, float8, text, text, text) IS
'The write of the chat tool write_memory: returns an identical memory (same partition, scope, content, author, source, model) written less than p_dedup_seconds before p_now (duplicate = true), else insert_memory_v2 (model check AMF01/AMF03, cap; id NULL when full), all under the partition''s cap lock, so a retried write never makes a second row.';
