-- Protection of manual memories (issue 14), release 1 (migration 0013_seed_model).
-- Released files are never edited: a change is a new file and a new migration.
--
-- A memory a person added (source = 'user': `/memory … add`, the CLI) is never changed
-- or deleted by an automatic process: the chat LLM's update_memory / delete_memory, the
-- L3 loop, automatic extraction. The tools check it first to answer the LLM clearly;
-- these functions check it again in the database, so that no automatic path that goes
-- through them can bypass it. p_protect_user = true is what every automatic caller
-- passes (the service's default); a person's command passes false.
--
-- SQLSTATE raised here (Python maps the code, never the message text):
--   AMP01  the memory is source = 'user' and p_protect_user is true: nothing changed


-- update_memory_v1 with the guard. The row is locked (FOR UPDATE) before the check, so
-- the check and the update see the same row; source is never changed by an update, so
-- the check cannot go stale inside the transaction.
--   psql> SELECT * FROM amrita_memory.update_memory_v2('QQPlatform_Private_10001',
--           '<32 hex id>', NULL, NULL, 9, false, NULL, NULL, NULL, now(), true);
CREATE OR REPLACE FUNCTION amrita_memory.update_memory_v2(
    p_partition text,
    p_id text,
    p_content text,
    p_tags text[],
    p_importance integer,
    p_set_category boolean,
    p_category text,
    p_embedding vector,
    p_fingerprint text,
    p_now timestamptz,
    p_protect_user boolean)
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
    updated_at timestamptz)
LANGUAGE plpgsql
AS $$
DECLARE
    v_source text;
BEGIN
    SELECT m.source INTO v_source
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = p_id
       FOR UPDATE;
    IF p_protect_user AND v_source = 'user' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMP01',
            MESSAGE = 'memory ' || p_id || ' was added by a person (source=user): '
                      || 'automatic processes may not change it',
            HINT = 'change it with /memory or the amrita-memory CLI';
    END IF;
    RETURN QUERY
    SELECT * FROM amrita_memory.update_memory_v1(
        p_partition, p_id, p_content, p_tags, p_importance, p_set_category, p_category,
        p_embedding, p_fingerprint, p_now);
END
$$;
COMMENT ON FUNCTION amrita_memory.update_memory_v2(text, text, text, text[], integer, boolean, text, vector, text, timestamptz, boolean) IS
'update_memory_v1 with the manual-entry guard: with p_protect_user a source=user memory is refused (SQLSTATE AMP01), nothing changes.';


-- Delete one memory of one partition; returns its id, NULL when it is not there (a
-- foreign partition's id deletes nothing). With p_protect_user a source = 'user' memory
-- is refused (AMP01) and stays.
--   psql> SELECT amrita_memory.delete_memory_v1('QQPlatform_Private_10001', '<id>', true);
CREATE OR REPLACE FUNCTION amrita_memory.delete_memory_v1(
    p_partition text,
    p_id text,
    p_protect_user boolean)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    v_source text;
BEGIN
    SELECT m.source INTO v_source
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = p_id
       FOR UPDATE;
    IF v_source IS NULL THEN
        RETURN NULL;
    END IF;
    IF p_protect_user AND v_source = 'user' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMP01',
            MESSAGE = 'memory ' || p_id || ' was added by a person (source=user): '
                      || 'automatic processes may not delete it',
            HINT = 'delete it with /memory or the amrita-memory CLI';
    END IF;
    DELETE FROM amrita_memory.memory m WHERE m.partition_key = p_partition AND m.id = p_id;
    RETURN p_id;
END
$$;
COMMENT ON FUNCTION amrita_memory.delete_memory_v1(text, text, boolean) IS
'Delete one memory of one partition (NULL when absent); with p_protect_user a source=user memory is refused (SQLSTATE AMP01) and kept.';
