-- L2 memory writes, release 9 (migration 0045_write_history_plain, issue 24): insert_memory_v5
-- with its create history row written as a plain INSERT. Released files are never edited: a
-- change is a new file and a new migration.
--
-- Why. Timed in-server (a plpgsql loop of 500 calls inside one transaction, no commit and no
-- round trip; a fresh copy of the 100k-memory / 1,000-partition bench database per variant
-- and round, 5 rounds): insert_memory_v5 181 us a call, the same with the history row as its
-- own INSERT ... VALUES 159 us, without any history row 132 us; release 2's insert_memory_v1
-- 80 us. A second data-modifying CTE (the history INSERT ... SELECT FROM the inserted row)
-- costs its own CTE scan and a bigger plan for every call; the row's shown fields are the
-- function's arguments anyway.
--
-- What. insert_memory_v6 takes insert_memory_v5's arguments and returns its columns, with the
-- same checks, errors and rows (the same create row: memory_fields_v2 of the same values).
-- write_memory_v5 is write_memory_v4 on insert_memory_v6. insert_memory_v5 and
-- write_memory_v4 stay installed: the previous release (d58e458) calls them; the release
-- after this one retires them.


-- Insert one memory under the partition cap, with its history row (see above).
--   psql> SELECT * FROM amrita_memory.insert_memory_v6('QQPlatform_Private_10001', 'user',
--           '用户喜欢猫', '{}', 5, NULL, 'auto', NULL, (SELECT embedding FROM amrita_memory.memory
--           LIMIT 1), (SELECT embed_fingerprint FROM amrita_memory.store_meta), now(), 100,
--           ARRAY['猫']);
CREATE OR REPLACE FUNCTION amrita_memory.insert_memory_v6(
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
    p_tokens text[],
    p_protocol text DEFAULT NULL,
    p_model text DEFAULT NULL,
    p_base_url text DEFAULT NULL)
RETURNS TABLE (id text, rows_before integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_dim integer := vector_dims(p_embedding);
    -- the actor as current_actor_v1 reads it ('kind:id'; system when unset or unknown)
    v_actor text := coalesce(nullif(current_setting('amrita_memory.actor', true), ''), 'system');
    v_kind text := split_part(v_actor, ':', 1);
    v_actor_id text := nullif(substr(v_actor, length(split_part(v_actor, ':', 1)) + 2), '');
    v_fingerprint text;
    v_store_dim integer;
BEGIN
    IF v_kind NOT IN ('person', 'llm', 'extraction', 'l3', 'import', 'system') THEN
        v_kind := 'system';
    END IF;
    -- The model, once: under the table lock a re-embed switch cannot commit until this
    -- transaction ends, and one committed before is seen (see above).
    LOCK TABLE amrita_memory.memory IN ROW EXCLUSIVE MODE;
    SELECT s.embed_fingerprint, s.embed_dim INTO v_fingerprint, v_store_dim
      FROM amrita_memory.store_meta s WHERE s.id = 1;
    IF v_fingerprint IS DISTINCT FROM p_fingerprint OR v_store_dim IS DISTINCT FROM v_dim THEN
        PERFORM amrita_memory.require_store_model_v1(
            p_fingerprint, v_dim, p_now, p_protocol, p_model, p_base_url);
    END IF;

    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    SELECT count(*)::integer INTO rows_before
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition;
    IF rows_before >= p_cap THEN
        RETURN NEXT;  -- id NULL: full
        RETURN;
    END IF;

    -- the trail trigger's refusal (trail_v1.sql): automatic processes leave a paused scope be
    IF v_kind IN ('llm', 'extraction', 'l3') THEN
        IF EXISTS (SELECT 1 FROM amrita_memory.paused_partition p
                    WHERE p.partition_key = p_partition) THEN
            RAISE EXCEPTION USING
                ERRCODE = 'AMZ01',
                MESSAGE = 'the memory of ' || p_partition || ' is paused: automatic processes may not change it',
                HINT = 'resume it with `amrita-memory resume` or /memory resume';
        END IF;
    END IF;

    PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    INSERT INTO amrita_memory.memory AS m
           (partition_key, scope, content, tags, importance, category, source, author,
            created_at, updated_at, tier_since, embedding, embed_fingerprint, search_tokens,
            origin)
    VALUES (p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, p_category,
            p_source, p_author, p_now, p_now, p_now, p_embedding, p_fingerprint,
            array_to_tsvector(p_tokens), v_kind)
    RETURNING m.id INTO id;
    -- The create row from the arguments: they are the row's shown fields (no BEFORE INSERT
    -- trigger on memory changes them), so the memory need not be read back through a CTE.
    INSERT INTO amrita_memory.memory_change
           (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
    VALUES (p_partition, id, now(), v_kind, v_actor_id, 'create', NULL,
            amrita_memory.memory_fields_v2(p_content, coalesce(p_tags, '{}'),
                                           p_importance::smallint, p_category, p_scope,
                                           p_source),
            nullif(current_setting('amrita_memory.note', true), ''));
    PERFORM set_config('amrita_memory.history_by_writer', '', true);
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION amrita_memory.insert_memory_v6(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text[], text, text, text) IS
'insert_memory_v5 (cap under an advisory lock, one model check AMF01/AMF03 before the cap under the table lock a re-embed switch waits for, search tokens, origin, its create history row; id NULL when full) writing the history row as its own INSERT from the arguments instead of a second data-modifying CTE over the inserted row.';


-- The chat tool's idempotent write (write_memory_v4) on insert_memory_v6.
CREATE OR REPLACE FUNCTION amrita_memory.write_memory_v5(
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
    p_tokens text[],
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
      FROM amrita_memory.insert_memory_v6(
               p_partition, p_scope, p_content, p_tags, p_importance, p_category, p_source,
               p_author, p_embedding, p_fingerprint, p_now, p_cap, p_tokens, p_protocol,
               p_model, p_base_url) i;
    -- The row as written (v3 read it back by id): its columns are these arguments.
    RETURN QUERY SELECT v_id, p_partition, p_scope, p_content,
                        CASE WHEN v_id IS NULL THEN p_tags ELSE coalesce(p_tags, '{}') END,
                        p_importance::smallint, p_category, p_source, p_author,
                        p_now, p_now, v_before, false;
END
$$;
COMMENT ON FUNCTION amrita_memory.write_memory_v5(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, float8, text[], text, text, text) IS
'write_memory_v4 on insert_memory_v6: an identical memory written less than p_dedup_seconds before p_now is returned (duplicate = true), else inserted with its search tokens and history row (cap, model check AMF01/AMF03).';
