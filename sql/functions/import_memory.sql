-- Import of one memory from another installation (amrita-memory import-legacy, and the
-- merge-restore of the reference plugin's JSON backups).
--
-- Why a function: the import merges into a LIVE store, so the per-partition cap must be
-- decided under the same transaction-level advisory lock the chat writes take
-- (insert_memory_v7, memory.sql: a bot writing at the same time never pushes a partition
-- past its cap), and the id, created_at and vector come from the old installation, which
-- the chat writes never accept. The caller computes (or reuses) the vector before the call.


-- previous release: 0.14 calls it during a rolling upgrade; the next release drops it.
-- import_memory_v2 counting the partition's rows (count(*)) for its cap.
CREATE OR REPLACE FUNCTION amrita_memory.import_memory_v1(
    p_id text,
    p_partition text,
    p_scope text,
    p_content text,
    p_tags text[],
    p_importance integer,
    p_created_at timestamptz,
    p_embedding vector,
    p_fingerprint text,
    p_now timestamptz,
    p_cap integer,
    p_replace boolean,
    p_protocol text DEFAULT NULL,
    p_model text DEFAULT NULL,
    p_base_url text DEFAULT NULL)
RETURNS TABLE (outcome text, rows_before integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_count integer;
    v_row amrita_memory.memory%ROWTYPE;
BEGIN
    -- The same key as insert_memory_v2's cap lock.
    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    SELECT count(*)::integer INTO v_count
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition;
    SELECT * INTO v_row
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = p_id;
    IF FOUND THEN
        IF NOT p_replace THEN
            RETURN QUERY SELECT 'present'::text, v_count;
            RETURN;
        END IF;
        IF v_row.scope = p_scope AND v_row.content = p_content
           AND v_row.tags = coalesce(p_tags, '{}') AND v_row.importance = p_importance
           AND v_row.created_at = p_created_at THEN
            RETURN QUERY SELECT 'unchanged'::text, v_count;
            RETURN;
        END IF;
        IF v_row.content <> p_content AND p_embedding IS NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = 'import_memory_v1: new content needs its new embedding';
        END IF;
        IF p_embedding IS NOT NULL THEN
            PERFORM amrita_memory.require_store_model_v1(
                p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
        END IF;
        UPDATE amrita_memory.memory m
           SET scope = p_scope,
               content = p_content,
               tags = coalesce(p_tags, '{}'),
               importance = p_importance,
               tier_since = CASE WHEN m.importance = p_importance THEN m.tier_since
                                 ELSE p_created_at END,
               created_at = p_created_at,
               updated_at = p_now,
               embedding = coalesce(p_embedding, m.embedding),
               embed_fingerprint = CASE WHEN p_embedding IS NULL THEN m.embed_fingerprint
                                        ELSE p_fingerprint END
         WHERE m.partition_key = p_partition AND m.id = p_id;
        IF p_embedding IS NOT NULL THEN
            PERFORM amrita_memory.require_store_model_v1(
                p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
        END IF;
        RETURN QUERY SELECT 'replaced'::text, v_count;
        RETURN;
    END IF;
    IF v_count >= p_cap THEN
        RETURN QUERY SELECT 'full'::text, v_count;
        RETURN;
    END IF;
    IF p_embedding IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'import_memory_v1: a new memory needs its embedding';
    END IF;
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    INSERT INTO amrita_memory.memory
           (id, partition_key, scope, content, tags, importance, category, source, author,
            created_at, updated_at, tier_since, embedding, embed_fingerprint)
    VALUES (p_id, p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, NULL,
            'auto', NULL, p_created_at, p_now, p_created_at, p_embedding, p_fingerprint);
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    RETURN QUERY SELECT 'inserted'::text, v_count;
END
$$;
COMMENT ON FUNCTION amrita_memory.import_memory_v1(text, text, text, text, text[], integer, timestamptz, vector, text, timestamptz, integer, boolean, text, text, text) IS
'Merge one memory of another installation into a live store under the partition''s cap lock, keeping its id, created_at and vector: outcome inserted | present (kept) | unchanged | replaced (p_replace) | full (cap reached, nothing written); vectors model-checked (AMF01/AMF03). Idempotent: a second import writes nothing.';


-- Import one memory; the cap reads the partition's kept count (partition_count.sql).
--
-- Outcomes (column outcome):
--   inserted   a new row (p_id was not in the partition)
--   present    p_id is already in the partition and p_replace is false: the row is kept
--   unchanged  p_replace, and the row already holds exactly this memory
--   replaced   p_replace: scope, content, tags, importance, created_at (and the vector when
--              p_embedding is given) overwritten; updated_at = p_now
--   full       p_id is new but the partition holds p_cap rows: nothing written
-- A second import of the same data therefore returns present/unchanged for every row
-- and writes nothing (idempotent, which is also what makes a killed import resumable).
-- p_embedding may be NULL only for a row that exists and whose content does not change
-- (its vector stays valid); new content without a vector is refused with 22023. Every
-- vector written is model-checked like an insert (AMF01 fingerprint, AMF03 dimension),
-- before and after the write: the write's table lock conflicts with the re-embed switch's,
-- so the check after it sees a switch that committed since the first.
--   psql> SELECT * FROM amrita_memory.import_memory_v2('0123…', 'QQPlatform_Private_1',
--           'user', 'likes tea', '{}', 5, now(), '[…]', '<fp>', now(), 100, false);
CREATE OR REPLACE FUNCTION amrita_memory.import_memory_v2(
    p_id text,
    p_partition text,
    p_scope text,
    p_content text,
    p_tags text[],
    p_importance integer,
    p_created_at timestamptz,
    p_embedding vector,
    p_fingerprint text,
    p_now timestamptz,
    p_cap integer,
    p_replace boolean,
    p_protocol text DEFAULT NULL,
    p_model text DEFAULT NULL,
    p_base_url text DEFAULT NULL)
RETURNS TABLE (outcome text, rows_before integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_count integer;
    v_row amrita_memory.memory%ROWTYPE;
BEGIN
    -- The same key as insert_memory_v7's cap lock, and the same kept count.
    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    v_count := coalesce((SELECT c.n::integer FROM amrita_memory.partition_count c
                          WHERE c.partition_key = p_partition), 0);
    SELECT * INTO v_row
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = p_id;
    IF FOUND THEN
        IF NOT p_replace THEN
            RETURN QUERY SELECT 'present'::text, v_count;
            RETURN;
        END IF;
        IF v_row.scope = p_scope AND v_row.content = p_content
           AND v_row.tags = coalesce(p_tags, '{}') AND v_row.importance = p_importance
           AND v_row.created_at = p_created_at THEN
            RETURN QUERY SELECT 'unchanged'::text, v_count;
            RETURN;
        END IF;
        IF v_row.content <> p_content AND p_embedding IS NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = 'import_memory_v2: new content needs its new embedding';
        END IF;
        IF p_embedding IS NOT NULL THEN
            PERFORM amrita_memory.require_store_model_v1(
                p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
        END IF;
        UPDATE amrita_memory.memory m
           SET scope = p_scope,
               content = p_content,
               tags = coalesce(p_tags, '{}'),
               importance = p_importance,
               tier_since = CASE WHEN m.importance = p_importance THEN m.tier_since
                                 ELSE p_created_at END,
               created_at = p_created_at,
               updated_at = p_now,
               embedding = coalesce(p_embedding, m.embedding),
               embed_fingerprint = CASE WHEN p_embedding IS NULL THEN m.embed_fingerprint
                                        ELSE p_fingerprint END
         WHERE m.partition_key = p_partition AND m.id = p_id;
        IF p_embedding IS NOT NULL THEN
            PERFORM amrita_memory.require_store_model_v1(
                p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
        END IF;
        RETURN QUERY SELECT 'replaced'::text, v_count;
        RETURN;
    END IF;
    IF v_count >= p_cap THEN
        RETURN QUERY SELECT 'full'::text, v_count;
        RETURN;
    END IF;
    IF p_embedding IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'import_memory_v2: a new memory needs its embedding';
    END IF;
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    INSERT INTO amrita_memory.memory
           (id, partition_key, scope, content, tags, importance, category, source, author,
            created_at, updated_at, tier_since, embedding, embed_fingerprint)
    VALUES (p_id, p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, NULL,
            'auto', NULL, p_created_at, p_now, p_created_at, p_embedding, p_fingerprint);
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    RETURN QUERY SELECT 'inserted'::text, v_count;
END
$$;
COMMENT ON FUNCTION amrita_memory.import_memory_v2(text, text, text, text, text[], integer, timestamptz, vector, text, timestamptz, integer, boolean, text, text, text) IS
'Merge one memory of another installation into a live store under the partition''s cap lock (its kept count, partition_count), keeping its id, created_at and vector: outcome inserted | present (kept) | unchanged | replaced (p_replace) | full (cap reached, nothing written); vectors model-checked (AMF01/AMF03). Idempotent: a second import writes nothing.';
