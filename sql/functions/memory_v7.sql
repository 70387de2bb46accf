-- L2 memory writes, release 7 (migration 0030_write_fast, issue 24): the insert records its
-- own history. Released files are never edited: a change is a new file and a new migration.
--
-- Why. Since the trail (0019) and origins (0021) an insert paid, besides its row, the
-- change-history statement trigger (~0.15-0.23 ms of a ~0.45 ms call in-server: the
-- AFTER-trigger queue, a plpgsql call, four statements over a transition table, for one
-- history row) and the origin DEFAULT actor_origin_v1() (two SQL functions that are not
-- inlined, planned on every insert). bench/ab_l2.py: write p50 1.30x release 2's.
--
-- What. insert_memory_v4 takes insert_memory_v3's arguments and returns its columns, with
-- the same checks in the same order (model AMF01/AMF03 before and after, the cap under the
-- partition's advisory lock, id NULL when full). It writes the row and its 'create'
-- history row in ONE statement (a data-modifying CTE) under
-- amrita_memory.history_by_writer = 'on', so the trail trigger stays out (trail_v3.sql);
-- the history row is the one record_memory_change_v2 writes: actor kind and id of the
-- transaction's amrita_memory.actor as current_actor_v1 reads it, op create, the fields
-- as memory_fields_v1 builds them, note amrita_memory.note. An automatic actor (llm,
-- extraction, l3) is refused on a paused partition with the trigger's AMZ01, after the
-- cap check as before. origin is the actor kind, passed instead of computed by the
-- column's DEFAULT (the same value). No history trim: the new row's id is fresh
-- (gen_random_uuid), so its history is this one row and history_keep is at least 1.
-- write_memory_v3 is write_memory_v2 on insert_memory_v4.


-- Insert one memory under the partition cap, with its history row (see above).
--   psql> SELECT * FROM amrita_memory.insert_memory_v4('QQPlatform_Private_10001', 'user',
--           '用户喜欢猫', '{}', 5, NULL, 'auto', NULL, (SELECT embedding FROM amrita_memory.memory
--           LIMIT 1), (SELECT embed_fingerprint FROM amrita_memory.store_meta), now(), 100,
--           ARRAY['猫']);
CREATE OR REPLACE FUNCTION amrita_memory.insert_memory_v4(
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
    v_count integer;
    v_id text;
BEGIN
    IF v_kind NOT IN ('person', 'llm', 'extraction', 'l3', 'import', 'system') THEN
        v_kind := 'system';
    END IF;
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, v_dim, p_now, p_protocol, p_model, p_base_url);

    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    SELECT count(*)::integer INTO v_count
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition;
    IF v_count >= p_cap THEN
        RETURN QUERY SELECT NULL::text, v_count;
        RETURN;
    END IF;

    -- the trail trigger's refusal (trail_v1.sql): automatic processes leave a paused scope be
    IF v_kind IN ('llm', 'extraction', 'l3')
       AND EXISTS (SELECT 1 FROM amrita_memory.paused_partition p
                    WHERE p.partition_key = p_partition) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMZ01',
            MESSAGE = 'the memory of ' || p_partition || ' is paused: automatic processes may not change it',
            HINT = 'resume it with `amrita-memory resume` or /memory resume';
    END IF;

    PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    WITH m AS (
        INSERT INTO amrita_memory.memory AS m
               (partition_key, scope, content, tags, importance, category, source, author,
                created_at, updated_at, tier_since, embedding, embed_fingerprint, search_tokens,
                origin)
        VALUES (p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, p_category,
                p_source, p_author, p_now, p_now, p_now, p_embedding, p_fingerprint,
                array_to_tsvector(p_tokens), v_kind)
        RETURNING m.partition_key, m.id, m.content, m.tags, m.importance, m.category, m.scope,
                  m.source
    ), history AS (
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        SELECT m.partition_key, m.id, now(), v_kind, v_actor_id, 'create', NULL,
               amrita_memory.memory_fields_v2(m.content, m.tags, m.importance, m.category,
                                              m.scope, m.source),
               nullif(current_setting('amrita_memory.note', true), '')
          FROM m
    )
    SELECT m.id INTO v_id FROM m;
    PERFORM set_config('amrita_memory.history_by_writer', '', true);

    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, v_dim, p_now, p_protocol, p_model, p_base_url);
    RETURN QUERY SELECT v_id, v_count;
END
$$;
COMMENT ON FUNCTION amrita_memory.insert_memory_v4(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text[], text, text, text) IS
'insert_memory_v3 (cap under an advisory lock, model check AMF01/AMF03, search tokens; id NULL when full) writing its own create history row and origin in the same statement (the trail trigger stays out: amrita_memory.history_by_writer).';


-- The chat tool's idempotent write (write_memory_v2) on insert_memory_v4.
CREATE OR REPLACE FUNCTION amrita_memory.write_memory_v3(
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
      FROM amrita_memory.insert_memory_v4(
               p_partition, p_scope, p_content, p_tags, p_importance, p_category, p_source,
               p_author, p_embedding, p_fingerprint, p_now, p_cap, p_tokens, p_protocol,
               p_model, p_base_url) i;
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
COMMENT ON FUNCTION amrita_memory.write_memory_v3(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, float8, text[], text, text, text) IS
'write_memory_v2 on insert_memory_v4: an identical memory written less than p_dedup_seconds before p_now is returned (duplicate = true), else inserted with its search tokens and history row (cap, model check AMF01/AMF03).';
