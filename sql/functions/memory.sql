-- L2 memory writes: insert, the chat tool's idempotent write, update, delete, and the
-- model check every write of a vector passes. Reads are in search.sql, the history the
-- writes leave in trail.sql.
--
-- The cap. A partition holds at most p_cap memories, decided inside the writing
-- transaction under a transaction-level advisory lock on the partition
-- (hashtextextended('amrita_memory.partition:' || key)): concurrent writers can never
-- exceed it, and the lock is held for microseconds, never across an HTTP request (the
-- caller computes the embedding BEFORE the call). The count is the partition's kept
-- count (partition_count, kept by the memory table's triggers: partition_count.sql), one
-- key lookup whatever the partition's size; the previous release counted the rows.
--
-- The model. Every vector written matches the store's embedding model: its fingerprint
-- (AMF01) and its dimension (AMF03) against store_meta, recorded by the first write of a
-- store (require_store_model_v1). The insert reads store_meta once, after taking the
-- memory table's ROW EXCLUSIVE lock (the lock its INSERT takes anyway): the lock
-- conflicts with the re-embed switch's, so a switch either committed before (this read
-- sees the new model: AMF01, nothing written) or waits for this transaction. The check
-- runs before the cap, so a writer on another model is refused even on a full partition.
--
-- Manual memories. A memory a person added (source = 'user': `/memory … add`, the CLI)
-- is never changed or deleted by an automatic process: the chat LLM's update_memory /
-- delete_memory, the L3 loop, automatic extraction. The tools check it first to answer
-- the LLM clearly; update_memory_v3 and delete_memory_v1 check it again in the database
-- (p_protect_user, what every automatic caller passes; a person's command passes false).
--
-- The history. A write records its own history row in its own statement (the
-- amrita_memory.history_by_writer setting keeps the trail's row triggers out, trail.sql):
-- a heap row and its key, where the trigger's call cost as much as the insert itself.
-- An automatic actor (llm, extraction, l3) writing a paused partition is refused (AMZ01).
--
-- SQLSTATEs (Python maps the codes, never the message text):
--   AMF01  the vector comes from another embedding model (fingerprint) than the store's
--   AMF03  the vector has another dimension than the store's
--   AMP01  a source = 'user' memory and p_protect_user: nothing changed
--   AMZ01  an automatic actor on a paused partition: nothing changed
--   22023  new content without its new embedding


-- The model check of every write of a vector: p_fingerprint must be the store's
-- (store_meta.embed_fingerprint, else AMF01) and p_dim its dimension (embed_dim, else
-- AMF03). Whatever is still unrecorded is recorded first, in the caller's transaction:
-- the fingerprint is the first writer's; the dimension is the writer's unless the stored
-- vectors prove it wrong (rows exist and none has it: then theirs, and the writer is
-- refused). That path is rare (the first write of a store, or the first after an upgrade
-- from a release that never recorded embed_dim) and locks: the memory table in ROW
-- EXCLUSIVE mode first (what the caller's INSERT/UPDATE takes anyway; taking it before
-- the store_meta row keeps the re-embed switch's lock order, so the two cannot
-- deadlock), then the store_meta row, so two first writers of different models cannot
-- both record theirs. The common path is one primary-key read.
--   psql> SELECT amrita_memory.require_store_model_v1('<fingerprint>', 384, now());
CREATE OR REPLACE FUNCTION amrita_memory.require_store_model_v1(
    p_fingerprint text,
    p_dim integer,
    p_now timestamptz,
    p_protocol text DEFAULT NULL,
    p_model text DEFAULT NULL,
    p_base_url text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_fingerprint text;
    v_dim integer;
BEGIN
    SELECT s.embed_fingerprint, s.embed_dim INTO v_fingerprint, v_dim
      FROM amrita_memory.store_meta s WHERE s.id = 1;
    IF v_fingerprint IS NULL OR v_dim IS NULL THEN
        LOCK TABLE amrita_memory.memory IN ROW EXCLUSIVE MODE;
        SELECT s.embed_fingerprint, s.embed_dim INTO v_fingerprint, v_dim
          FROM amrita_memory.store_meta s WHERE s.id = 1 FOR UPDATE;
        IF v_dim IS NULL THEN
            IF EXISTS (SELECT 1 FROM amrita_memory.memory m WHERE vector_dims(m.embedding) = p_dim)
               OR EXISTS (SELECT 1 FROM amrita_memory.knowledge k WHERE vector_dims(k.embedding) = p_dim)
               OR NOT (EXISTS (SELECT 1 FROM amrita_memory.memory)
                       OR EXISTS (SELECT 1 FROM amrita_memory.knowledge)) THEN
                v_dim := p_dim;
            ELSE
                SELECT vector_dims(x.embedding) INTO v_dim
                  FROM (SELECT m.embedding FROM amrita_memory.memory m LIMIT 1) x;
                IF v_dim IS NULL THEN
                    SELECT vector_dims(k.embedding) INTO v_dim FROM amrita_memory.knowledge k LIMIT 1;
                END IF;
            END IF;
        END IF;
        IF v_fingerprint IS NULL THEN
            UPDATE amrita_memory.store_meta s
               SET embed_fingerprint = p_fingerprint, embed_protocol = p_protocol,
                   embed_model = p_model, embed_base_url = p_base_url,
                   embed_dim = v_dim, updated_at = p_now
             WHERE s.id = 1;
            v_fingerprint := p_fingerprint;
        ELSE
            UPDATE amrita_memory.store_meta s SET embed_dim = v_dim, updated_at = p_now
             WHERE s.id = 1;
        END IF;
    END IF;
    IF v_fingerprint IS DISTINCT FROM p_fingerprint THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF01',
            MESSAGE = 'embedding model mismatch: the store holds vectors of fingerprint '
                      || v_fingerprint || ', this writer uses ' || coalesce(p_fingerprint, '?'),
            HINT = 'run `amrita-memory reindex`, or configure the model the store was built with';
    END IF;
    IF v_dim IS DISTINCT FROM p_dim THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF03',
            MESSAGE = format('embedding dimension mismatch: the store holds %s-dimensional vectors '
                             'of fingerprint %s, this writer''s vector has %s dimensions',
                             v_dim, v_fingerprint, coalesce(p_dim::text, '?')),
            HINT = 'the model changed under its name: run `amrita-memory reindex`, '
                   'or configure the model the store was built with';
    END IF;
END
$$;
COMMENT ON FUNCTION amrita_memory.require_store_model_v1(text, integer, timestamptz, text, text, text) IS
'Model check of every vector write: fingerprint must equal store_meta.embed_fingerprint (else SQLSTATE AMF01) and dimension store_meta.embed_dim (else AMF03); records either when still NULL.';


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


-- Update one memory: NULL fields keep theirs. New content comes with its new embedding
-- (22023 without) AND its new search tokens (p_tokens; NULL with new content = to be
-- backfilled); tokens without new content are ignored (they belong to the text). With
-- p_protect_user a source = 'user' memory is refused with SQLSTATE AMP01 and nothing
-- changes. The row is locked (FOR UPDATE) before the check, so the check and the update
-- see the same row; source is never changed by an update.
--   psql> SELECT * FROM amrita_memory.update_memory_v3('QQPlatform_Private_10001',
--           '<32 hex id>', NULL, NULL, 9, false, NULL, NULL, NULL, now(), NULL, true);
CREATE OR REPLACE FUNCTION amrita_memory.update_memory_v3(
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
    p_tokens text[],
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
    IF p_content IS NOT NULL AND p_embedding IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'update_memory_v3: new content needs its new embedding (pass NULL content to keep the text)';
    END IF;
    IF p_embedding IS NOT NULL THEN
        PERFORM amrita_memory.require_store_model_v1(p_fingerprint, vector_dims(p_embedding), p_now);
    END IF;

    RETURN QUERY
    WITH changed AS (
        UPDATE amrita_memory.memory m
           SET content = coalesce(p_content, m.content),
               tags = coalesce(p_tags, m.tags),
               importance = coalesce(p_importance, m.importance),
               category = CASE WHEN p_set_category THEN p_category ELSE m.category END,
               embedding = coalesce(p_embedding, m.embedding),
               embed_fingerprint = CASE WHEN p_embedding IS NULL THEN m.embed_fingerprint
                                        ELSE p_fingerprint END,
               search_tokens = CASE WHEN p_content IS NULL THEN m.search_tokens
                                    ELSE array_to_tsvector(p_tokens) END,
               tier_since = CASE
                   WHEN p_importance IS NOT NULL AND amrita_memory.importance_rank_v1(p_importance)
                        <> amrita_memory.importance_rank_v1(m.importance) THEN p_now
                   ELSE m.tier_since END,
               updated_at = p_now
         WHERE m.partition_key = p_partition AND m.id = p_id
        RETURNING m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
                  m.source, m.author, m.created_at, m.updated_at)
    SELECT * FROM changed;

    IF FOUND AND p_embedding IS NOT NULL THEN
        PERFORM amrita_memory.require_store_model_v1(p_fingerprint, vector_dims(p_embedding), p_now);
    END IF;
END
$$;
COMMENT ON FUNCTION amrita_memory.update_memory_v3(text, text, text, text[], integer, boolean, text, vector, text, timestamptz, text[], boolean) IS
'Update one memory (NULL = keep a field): new content with its embedding (else 22023) and its search tokens; model check AMF01/AMF03; with p_protect_user a source=user memory is refused, SQLSTATE AMP01.';


-- previous release: 0.14 calls it during a rolling upgrade; the next release drops it.
-- insert_memory_v6 with its history row written by a data-modifying CTE over the inserted
-- row (a second CTE scan and a bigger plan on every call).
--   psql> SELECT * FROM amrita_memory.insert_memory_v5('QQPlatform_Private_10001', 'user',
--           '用户喜欢猫', '{}', 5, NULL, 'auto', NULL, (SELECT embedding::vector FROM amrita_memory.memory
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
'The previous release''s insert: insert_memory_v6 with its create history row written by a data-modifying CTE over the inserted row.';


-- previous release: 0.14 calls it during a rolling upgrade; the next release drops it.
-- insert_memory_v7 counting the partition's rows (count(*)) for its cap instead of reading
-- its kept count: as long as the partition is large.
--   psql> SELECT * FROM amrita_memory.insert_memory_v6('QQPlatform_Private_10001', 'user',
--           '用户喜欢猫', '{}', 5, NULL, 'auto', NULL, (SELECT embedding::vector FROM amrita_memory.memory
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


-- Insert one memory under the partition cap, with its history row. Returns its id (NULL
-- when the partition is full) and the partition's count before the call, read from its
-- kept count (partition_count) instead of counting its rows; the row it adds it counts
-- itself (amrita_memory.count_by_writer, partition_count.sql).
--   psql> SELECT * FROM amrita_memory.insert_memory_v7('QQPlatform_Private_10001', 'user',
--           '用户喜欢猫', '{}', 5, NULL, 'auto', NULL, (SELECT embedding::vector FROM amrita_memory.memory
--           LIMIT 1), (SELECT embed_fingerprint FROM amrita_memory.store_meta), now(), 100,
--           ARRAY['猫']);
CREATE OR REPLACE FUNCTION amrita_memory.insert_memory_v7(
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
    rows_before := coalesce((SELECT c.n::integer FROM amrita_memory.partition_count c
                              WHERE c.partition_key = p_partition), 0);
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
    PERFORM set_config('amrita_memory.count_by_writer', 'on', true);
    INSERT INTO amrita_memory.memory AS m
           (partition_key, scope, content, tags, importance, category, source, author,
            created_at, updated_at, tier_since, embedding, embed_fingerprint, search_tokens,
            origin)
    VALUES (p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, p_category,
            p_source, p_author, p_now, p_now, p_now, p_embedding, p_fingerprint,
            array_to_tsvector(p_tokens), v_kind)
    RETURNING m.id INTO id;
    PERFORM set_config('amrita_memory.count_by_writer', '', true);
    -- its row in the partition's count (the insert trigger skipped the statement)
    INSERT INTO amrita_memory.partition_count AS c (partition_key, n)
    VALUES (p_partition, 1)
    ON CONFLICT ON CONSTRAINT pk_partition_count DO UPDATE SET n = c.n + 1;
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
COMMENT ON FUNCTION amrita_memory.insert_memory_v7(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text[], text, text, text) IS
'Insert one memory under the partition cap (advisory lock, the kept count partition_count read instead of counting the rows, its own row counted by itself under amrita_memory.count_by_writer), one model check AMF01/AMF03 before the cap under the table lock a re-embed switch waits for, search tokens, origin, its create history row; id NULL when full.';


-- previous release: 0.14 calls it during a rolling upgrade; the next release drops it.
-- write_memory_v6 on insert_memory_v6 (its cap and a duplicate's count from count(*)).
-- The chat tool write_memory: insert_memory_v6, idempotent within a window. A write whose
-- reply was lost (a connection cut after the statement was sent, a client-side timeout)
-- has an unknown outcome, and the LLM is told to check and maybe retry: a retry of the
-- very same write must not make a second row. So, under the partition's advisory lock
-- (re-entrant: held from the lookup to the commit, so two concurrent identical writes
-- leave exactly one row), this first looks for a memory of the same partition, scope,
-- content, author and source, written with the same embedding model no more than
-- p_dedup_seconds before p_now; if there is one it is returned (duplicate = true) and
-- nothing is written. p_dedup_seconds <= 0 turns the lookup off. The lookup walks the
-- (partition_key, created_at, id) index over at most the window's rows of one partition;
-- a row of another model never matches, so a writer on the wrong model still gets the
-- insert's refusal. Returns the memory's columns (id NULL when the partition is full),
-- the partition's count before the call, and whether the memory already existed.
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
'The chat tool''s write on insert_memory_v6: an identical memory written less than p_dedup_seconds before p_now is returned (duplicate = true), else inserted with its search tokens and history row (cap, model check AMF01/AMF03).';


-- The chat tool write_memory: insert_memory_v7, idempotent within a window. A write whose
-- reply was lost (a connection cut after the statement was sent, a client-side timeout)
-- has an unknown outcome, and the LLM is told to check and maybe retry: a retry of the
-- very same write must not make a second row. So, under the partition's advisory lock
-- (re-entrant: held from the lookup to the commit, so two concurrent identical writes
-- leave exactly one row), this first looks for a memory of the same partition, scope,
-- content, author and source, written with the same embedding model no more than
-- p_dedup_seconds before p_now; if there is one it is returned (duplicate = true) and
-- nothing is written. p_dedup_seconds <= 0 turns the lookup off. The lookup walks the
-- (partition_key, created_at, id) index over at most the window's rows of one partition;
-- a row of another model never matches, so a writer on the wrong model still gets the
-- insert's refusal. Returns the memory's columns (id NULL when the partition is full),
-- the partition's count before the call (its kept count, partition_count), and whether
-- the memory already existed.
CREATE OR REPLACE FUNCTION amrita_memory.write_memory_v6(
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
                   coalesce((SELECT c.n::integer FROM amrita_memory.partition_count c
                              WHERE c.partition_key = p_partition), 0),
                   true
              FROM amrita_memory.memory m
             WHERE m.partition_key = p_partition AND m.id = v_id;
            RETURN;
        END IF;
    END IF;

    SELECT i.id, i.rows_before INTO v_id, v_before
      FROM amrita_memory.insert_memory_v7(
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
COMMENT ON FUNCTION amrita_memory.write_memory_v6(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, float8, text[], text, text, text) IS
'The chat tool''s write on insert_memory_v7: an identical memory written less than p_dedup_seconds before p_now is returned (duplicate = true), else inserted with its search tokens and history row (cap from the kept count partition_count, model check AMF01/AMF03).';
