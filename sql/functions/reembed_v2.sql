-- The re-embed switch, version 2 (migration 0039_reembed_lock_order): a lock order that
-- cannot deadlock with a row-locking writer. Released files are never edited.
--
-- Why. reembed_switch_v1 took memory and knowledge IN SHARE ROW EXCLUSIVE MODE, which
-- blocks INSERT/UPDATE/DELETE (ROW EXCLUSIVE) but NOT SELECT ... FOR UPDATE (ROW SHARE).
-- delete_memory_v1 and update_memory_v3 (and knowledge and manual-guard edits) lock their
-- row FOR UPDATE first and DELETE/UPDATE it in a later statement. So, in the load run
-- (bench/load.py, a re-embed rerun beside 200 users; the server log names
-- delete_memory_v1 and reembed_switch_v1):
--   edit:   SELECT ... FOR UPDATE (row R locked, ROW SHARE on memory)
--   switch: LOCK memory SHARE ROW EXCLUSIVE (granted: no conflict with ROW SHARE)
--   switch: UPDATE memory ... (reaches R: waits for the edit's transaction)
--   edit:   DELETE/UPDATE memory ... (waits for ROW EXCLUSIVE on memory: the switch)
-- = 40P01 "deadlock detected": the edit's reply failed or, when the switch was the
-- victim, the re-embed exited 70.
-- A second order of the same kind: dropping a partial HNSW index of another dimension
-- upgraded the switch's lock to ACCESS EXCLUSIVE while it already held memory, against any
-- transaction holding ACCESS SHARE on memory and waiting for a lock the switch holds.
--
-- What. The switch takes, FIRST and once, the strongest table lock it will need:
-- EXCLUSIVE (conflicts with everything but plain reads, FOR UPDATE/FOR SHARE included), or
-- ACCESS EXCLUSIVE when an ANN index of another dimension will be dropped (a dimension
-- change, rare; reads then wait the seconds of the switch too). A row-locking writer
-- either finishes before the switch gets its lock or waits for it before locking a row.
-- Everything else is reembed_switch_v1's: same arguments, same result, same effects.
-- The pending/count functions of v1 and knowledge_v1.sql stay as they are.

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
'reembed_switch_v1 with a deadlock-free lock order: memory and knowledge locked first IN EXCLUSIVE MODE (also against FOR UPDATE row lockers), ACCESS EXCLUSIVE when an ANN index of another dimension is dropped. See sql/functions/reembed_v2.sql.';
