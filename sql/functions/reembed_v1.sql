-- Online re-embedding after an embedding-model change, version 1.
--
-- New vectors are written BESIDE the old ones (reembed_staging), REEMBED_BATCH_SIZE
-- rows per transaction, while retrieval keeps using memory.embedding. One final
-- transaction (reembed_switch_v1) swaps them in and records the new model. A crash
-- loses at most the batch in flight: staged rows survive and the next run skips them.
-- A staged vector is valid only for the text it was computed from: staging records
-- the row's updated_at, and an edit after that makes the row pending again.

-- Up to p_limit rows of one kind after p_after (id order) without a valid staged vector.
-- Keyset order keeps every call O(batch): a resumed run skips staged rows by index probe.
CREATE OR REPLACE FUNCTION amrita_memory.reembed_pending_v1(
    p_kind text, p_fingerprint text, p_after text, p_limit integer)
RETURNS TABLE (row_id text, body text, updated_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT m.id, m.content, m.updated_at
      FROM amrita_memory.memory m
     WHERE p_kind = 'memory' AND m.id > p_after
       AND NOT EXISTS (
             SELECT 1 FROM amrita_memory.reembed_staging s
              WHERE s.kind = 'memory' AND s.row_id = m.id
                AND s.fingerprint = p_fingerprint AND s.source_updated_at = m.updated_at)
     ORDER BY m.id
     LIMIT p_limit
$$;

-- Knowledge entries are searched by title and summary, so that is what gets embedded.
CREATE OR REPLACE FUNCTION amrita_memory.reembed_pending_knowledge_v1(
    p_fingerprint text, p_after text, p_limit integer)
RETURNS TABLE (row_id text, body text, updated_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT k.kid, k.title || E'\n' || k.summary, k.updated_at
      FROM amrita_memory.knowledge k
     WHERE k.kid > p_after
       AND NOT EXISTS (
             SELECT 1 FROM amrita_memory.reembed_staging s
              WHERE s.kind = 'knowledge' AND s.row_id = k.kid
                AND s.fingerprint = p_fingerprint AND s.source_updated_at = k.updated_at)
     ORDER BY k.kid
     LIMIT p_limit
$$;

-- How many memory and knowledge rows still lack a valid staged vector.
CREATE OR REPLACE FUNCTION amrita_memory.reembed_pending_count_v1(p_fingerprint text)
RETURNS integer
LANGUAGE sql STABLE
AS $$
    SELECT (SELECT count(*) FROM amrita_memory.memory m
             WHERE NOT EXISTS (
                   SELECT 1 FROM amrita_memory.reembed_staging s
                    WHERE s.kind = 'memory' AND s.row_id = m.id
                      AND s.fingerprint = p_fingerprint AND s.source_updated_at = m.updated_at))::integer
         + (SELECT count(*) FROM amrita_memory.knowledge k
             WHERE NOT EXISTS (
                   SELECT 1 FROM amrita_memory.reembed_staging s
                    WHERE s.kind = 'knowledge' AND s.row_id = k.kid
                      AND s.fingerprint = p_fingerprint AND s.source_updated_at = k.updated_at))::integer
$$;

-- The switch: one transaction that swaps every staged vector in and records the model.
--
-- Writers wait on the SHARE ROW EXCLUSIVE lock for its few seconds; readers do not
-- (they see the old vectors until commit). If rows without a staged vector exist (a
-- write since the last batch), nothing is switched and their count is returned: the
-- caller stages them and tries again. Partial HNSW indexes of another dimension can no
-- longer match any row and are dropped; maintenance rebuilds them for the new one.
CREATE OR REPLACE FUNCTION amrita_memory.reembed_switch_v1(
    p_fingerprint text, p_protocol text, p_model text, p_base_url text, p_dim integer, p_now timestamptz)
RETURNS TABLE (switched boolean, pending integer, memories integer, knowledge integer, dim integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_pending integer;
    v_mem integer := 0;
    v_kn integer := 0;
    v_dim integer;
    v_dims integer;
    r record;
BEGIN
    LOCK TABLE amrita_memory.memory, amrita_memory.knowledge IN SHARE ROW EXCLUSIVE MODE;
    v_pending := amrita_memory.reembed_pending_count_v1(p_fingerprint);
    IF v_pending > 0 THEN
        RETURN QUERY SELECT false, v_pending, 0, 0, NULL::integer;
        RETURN;
    END IF;

    SELECT min(vector_dims(s.embedding)), count(DISTINCT vector_dims(s.embedding))
      INTO v_dim, v_dims
      FROM amrita_memory.reembed_staging s
     WHERE s.fingerprint = p_fingerprint;
    IF v_dims > 1 THEN
        RAISE EXCEPTION 'staged vectors of fingerprint % have % different dimensions', p_fingerprint, v_dims
            USING ERRCODE = 'AMF02';
    END IF;
    v_dim := coalesce(v_dim, p_dim);

    UPDATE amrita_memory.memory m
       SET embedding = s.embedding, embed_fingerprint = p_fingerprint
      FROM amrita_memory.reembed_staging s
     WHERE s.kind = 'memory' AND s.row_id = m.id AND s.fingerprint = p_fingerprint;
    GET DIAGNOSTICS v_mem = ROW_COUNT;
    UPDATE amrita_memory.knowledge k
       SET embedding = s.embedding, embed_fingerprint = p_fingerprint
      FROM amrita_memory.reembed_staging s
     WHERE s.kind = 'knowledge' AND s.row_id = k.kid AND s.fingerprint = p_fingerprint;
    GET DIAGNOSTICS v_kn = ROW_COUNT;

    FOR r IN SELECT a.index_name FROM amrita_memory.ann_index a WHERE a.dim IS DISTINCT FROM v_dim LOOP
        EXECUTE format('DROP INDEX IF EXISTS amrita_memory.%I', r.index_name);
    END LOOP;
    DELETE FROM amrita_memory.ann_index a WHERE a.dim IS DISTINCT FROM v_dim;

    UPDATE amrita_memory.store_meta s
       SET embed_fingerprint = p_fingerprint, embed_protocol = p_protocol, embed_model = p_model,
           embed_base_url = p_base_url, embed_dim = v_dim, updated_at = p_now
     WHERE s.id = 1;
    DELETE FROM amrita_memory.reembed_staging;
    DELETE FROM amrita_memory.reembed_job;
    RETURN QUERY SELECT true, 0, v_mem, v_kn, v_dim;
END
$$;
