-- L2 memory writes, release 8 (migration 0038_write_faster, issue 24): insert_memory_v4's
-- statements, fewer of them. Released files are never edited: a change is a new file and a
-- new migration.
--
-- Why. Profiled per nested statement (pg_stat_statements track = all, auto_explain with
-- nested statements; 100k memories / 1,000 partitions, writes spread over them),
-- insert_memory_v4 spent ~320 us in-server per call against ~125 us for release 2's
-- insert_memory_v1: the row and its history row (one data-modifying CTE, ~160 us, of which
-- the history heap row and its key ~40-60 us and the four indexes of the memory ~90 us),
-- the cap's count (~40 us), the model check run twice through require_store_model_v1
-- (~15 us each, a plpgsql call and its query), the paused-partition test (~11 us: an
-- expression with a subquery is planned again on every call, for every actor, although
-- only an automatic actor needs it) and the plpgsql statements around them.
--
-- What. insert_memory_v5 takes insert_memory_v4's arguments and returns its columns, with
-- the same checks, errors and rows; three things differ:
--   * The model is checked ONCE, inline: the function first takes the memory table's ROW
--     EXCLUSIVE lock (the lock its INSERT takes anyway), then reads store_meta. The lock
--     conflicts with reembed_switch_v1's SHARE ROW EXCLUSIVE, so a switch either committed
--     before it (this read sees the new model: AMF01, nothing written) or waits for this
--     transaction — what v4's second check after the INSERT was for. Only when the store's
--     model is unrecorded or differs does it call require_store_model_v1 (which records a
--     NULL model or raises AMF01 / AMF03, the same errors as before); it still runs before
--     the cap, so a writer on another model is refused even on a full partition.
--   * The paused-partition test runs only for an automatic actor (llm, extraction, l3),
--     as its own statement.
--   * id and rows_before are returned as OUT values (RETURN NEXT), not by a query.
-- The history row is the one v4 writes (trail_v3.sql: actor, op create, the fields, note)
-- in the same statement as the memory. write_memory_v4 is write_memory_v3 on
-- insert_memory_v5, returning the new row from its arguments instead of reading it back
-- by id (they are its columns). insert_memory_v4 and write_memory_v3 stay installed: the
-- previous release (aeac65f) calls them; the release after this one retires them.


-- Insert one memory under the partition cap, with its history row (see above).
--   psql> SELECT * FROM amrita_memory.insert_memory_v5('QQPlatform_Private_10001', 'user',
--           '用户喜欢猫', '{}', 5, NULL, 'auto', NULL, (SELECT embedding FROM amrita_memory.memory
--           LIMIT 1), (SELECT embed_fingerprint FROM amrita_memory.store_meta), now(), 100,
--           ARRAY['猫']);
CREATE OR REPLACE FUNCTION amrita_memory.insert_memory_v5(
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
    SELECT m.id INTO id FROM m;
    PERFORM set_config('amrita_memory.history_by_writer', '', true);
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION amrita_memory.insert_memory_v5(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text[], text, text, text) IS
'insert_memory_v4 (cap under an advisory lock, model check AMF01/AMF03 before the cap, search tokens, its create history row and origin in the same statement; id NULL when full) checking the model once, under the table lock a re-embed switch waits for.';


-- The chat tool's idempotent write (write_memory_v3) on insert_memory_v5.
CREATE OR REPLACE FUNCTION amrita_memory.write_memory_v4(
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
      FROM amrita_memory.insert_memory_v5(
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
COMMENT ON FUNCTION amrita_memory.write_memory_v4(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, float8, text[], text, text, text) IS
'write_memory_v3 on insert_memory_v5: an identical memory written less than p_dedup_seconds before p_now is returned (duplicate = true), else inserted with its search tokens and history row (cap, model check AMF01/AMF03).';
