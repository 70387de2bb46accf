-- Online re-embedding after an embedding-model change.
--
-- New vectors are written BESIDE the old ones (reembed_staging), REEMBED_BATCH_SIZE
-- rows per transaction, while retrieval keeps using memory.embedding. One final
-- transaction (reembed_switch_v2) swaps them in and records the new model. A crash
-- loses at most the batch in flight: staged rows survive and the next run skips them.
-- A staged vector is valid only for the text it was computed from: staging records
-- the row's updated_at, and an edit after that makes the row pending again.
-- The walks are keyset pages, so every call is O(batch) and a resumed run skips staged
-- rows by index probe: the memories in the primary key's order (partition_key, id), the
-- knowledge in kid order.


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
COMMENT ON FUNCTION amrita_memory.reembed_pending_count_v1(text) IS
'How many memory and knowledge rows still lack a valid staged vector of p_fingerprint.';


-- Up to p_limit knowledge rows after p_after (kid order) without a valid staged vector,
-- with the text to embed: the SUMMARY, as a knowledge write embeds it (a re-embed must
-- compute the same text as a write).
CREATE OR REPLACE FUNCTION amrita_memory.reembed_pending_knowledge_v2(
    p_fingerprint text, p_after text, p_limit integer)
RETURNS TABLE (row_id text, body text, updated_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT k.kid, k.summary, k.updated_at
      FROM amrita_memory.knowledge k
     WHERE k.kid > p_after
       AND NOT EXISTS (
             SELECT 1 FROM amrita_memory.reembed_staging s
              WHERE s.kind = 'knowledge' AND s.row_id = k.kid
                AND s.fingerprint = p_fingerprint AND s.source_updated_at = k.updated_at)
     ORDER BY k.kid
     LIMIT p_limit
$$;
COMMENT ON FUNCTION amrita_memory.reembed_pending_knowledge_v2(text, text, integer) IS
'Knowledge rows still to re-embed after p_after (kid order), with their summary (the text a write embeds).';


-- The switch: one transaction that swaps every staged vector in and records the model.
--
-- Readers do not wait (they see the old vectors until commit); writers wait the switch's
-- few seconds. If rows without a staged vector exist (a write since the last batch),
-- nothing is switched and their count is returned: the caller stages them and tries
-- again. Partial HNSW indexes of another dimension can no longer match any row and are
-- dropped; maintenance rebuilds them for the new one. SQLSTATE AMF02: staged vectors of
-- one fingerprint with mixed dimensions.
--
-- The lock order cannot deadlock with a row-locking writer: the switch takes, FIRST and
-- once, the strongest table lock it will need: EXCLUSIVE (conflicts with everything but
-- plain reads, FOR UPDATE/FOR SHARE included), or ACCESS EXCLUSIVE when an ANN index of
-- another dimension will be dropped (a dimension change, rare; reads then wait the seconds
-- of the switch too). A writer that locks its row FOR UPDATE and writes it in a later
-- statement (delete_memory_v1, update_memory_v3, the knowledge edits) either finishes
-- before the switch gets its lock or waits for it before locking a row. A weaker lock
-- (SHARE ROW EXCLUSIVE, which FOR UPDATE does not conflict with) let the switch's UPDATE
-- wait for such a row while the writer's next statement waited for the switch: 40P01.
CREATE OR REPLACE FUNCTION amrita_memory.reembed_switch_v2(
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
    -- Staged vectors are written by this job only: their dimension, read before any lock,
    -- says whether an index will be dropped (checked again under the lock below).
    SELECT min(vector_dims(s.embedding)) INTO v_dim
      FROM amrita_memory.reembed_staging s
     WHERE s.fingerprint = p_fingerprint;
    IF EXISTS (SELECT 1 FROM amrita_memory.ann_index a
                WHERE a.dim IS DISTINCT FROM coalesce(v_dim, p_dim)) THEN
        LOCK TABLE amrita_memory.memory, amrita_memory.knowledge IN ACCESS EXCLUSIVE MODE;
    ELSE
        LOCK TABLE amrita_memory.memory, amrita_memory.knowledge IN EXCLUSIVE MODE;
    END IF;
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
COMMENT ON FUNCTION amrita_memory.reembed_switch_v2(text, text, text, text, integer, timestamptz) IS
'The re-embed switch: in one transaction swap every staged vector in and record the model; nothing when rows are pending; AMF02 for mixed dimensions. memory and knowledge are locked first IN EXCLUSIVE MODE (also against FOR UPDATE row lockers), ACCESS EXCLUSIVE when an ANN index of another dimension is dropped: no deadlock with a row-locking writer. See sql/functions/reembed.sql.';


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
