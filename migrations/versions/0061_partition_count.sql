-- 0061_partition_count's upgrade, frozen with it (never edited): partition_count: the cap reads a kept per-partition row count instead of count(*).

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

-- Insert one memory under the partition cap, with its history row. Returns its id (NULL
-- when the partition is full) and the partition's count before the call, read from its
-- kept count (partition_count) instead of counting its rows; the row it adds it counts
-- itself (amrita_memory.count_by_writer, partition_count.sql).
--   psql> SELECT * FROM amrita_memory.insert_memory_v7('QQPlatform_Private_10001', 'user',
--           '用户喜欢猫', '{}', 5, NULL, 'auto', NULL, (SELECT embedding FROM amrita_memory.memory
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

-- After INSERT (statement): add the statement's new rows to their partitions' counts.
CREATE OR REPLACE FUNCTION amrita_memory.partition_count_added_v1()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO amrita_memory.partition_count AS c (partition_key, n)
    SELECT r.partition_key, count(*)
      FROM added r
     GROUP BY r.partition_key
     ORDER BY r.partition_key
    ON CONFLICT (partition_key) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION amrita_memory.partition_count_added_v1() IS
'Statement trigger on memory (AFTER INSERT): adds the inserted rows to partition_count, partitions in key order.';

-- The partitions whose kept count differs from their rows (kept: partition_count's n, 0
-- when it has no row; actual: count(*) of the memory table), both read in one snapshot,
-- so a write committing meanwhile is either in both or in neither. With p_repair each is
-- set right: its count row locked first (a writer that has already counted waits, one
-- that has not yet adds its change on top of the repaired value), then the partition
-- counted again in a new snapshot, the count row written (or removed at 0). Rows are
-- returned with the count the repair found. A whole-table count: an operator's check
-- (`amrita-memory status` runs it without p_repair), not a per-message path. A repair
-- needs READ COMMITTED (the default): a later snapshot must see the writers it waited for.
--   psql> SELECT * FROM amrita_memory.partition_count_check_v1();       -- check
--   psql> SELECT * FROM amrita_memory.partition_count_check_v1(true);   -- and repair
CREATE OR REPLACE FUNCTION amrita_memory.partition_count_check_v1(p_repair boolean DEFAULT false)
RETURNS TABLE (partition_key text, kept bigint, actual bigint)
LANGUAGE plpgsql
AS $$
DECLARE
    v_key text;
    v_kept bigint;
    v_actual bigint;
BEGIN
    IF p_repair AND current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION USING
            ERRCODE = '25000',
            MESSAGE = 'partition_count_check_v1(true) repairs under READ COMMITTED only',
            HINT = 'run it in its own transaction at the default isolation level';
    END IF;
    FOR v_key, v_kept, v_actual IN
        SELECT coalesce(c.partition_key, m.partition_key), coalesce(c.n, 0), coalesce(m.n, 0)
          FROM amrita_memory.partition_count c
          FULL JOIN (SELECT r.partition_key, count(*) AS n
                       FROM amrita_memory.memory r
                      GROUP BY r.partition_key) m ON m.partition_key = c.partition_key
         WHERE coalesce(c.n, 0) <> coalesce(m.n, 0)
         ORDER BY 1
    LOOP
        IF p_repair THEN
            PERFORM 1 FROM amrita_memory.partition_count c
              WHERE c.partition_key = v_key FOR UPDATE;
            SELECT count(*) INTO v_actual
              FROM amrita_memory.memory m WHERE m.partition_key = v_key;
            IF v_actual = 0 THEN
                DELETE FROM amrita_memory.partition_count c WHERE c.partition_key = v_key;
            ELSE
                INSERT INTO amrita_memory.partition_count AS c (partition_key, n)
                VALUES (v_key, v_actual)
                ON CONFLICT ON CONSTRAINT pk_partition_count DO UPDATE SET n = excluded.n;
            END IF;
        END IF;
        partition_key := v_key;
        kept := v_kept;
        actual := v_actual;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION amrita_memory.partition_count_check_v1(boolean) IS
'The partitions whose kept row count (partition_count) differs from their rows, with both counts; p_repair sets each right under its count row''s lock (READ COMMITTED).';

-- After UPDATE of partition_key (row, only when the key changed): one row moves from the
-- old key's count to the new key's, both in key order.
CREATE OR REPLACE FUNCTION amrita_memory.partition_count_moved_v1()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO amrita_memory.partition_count AS c (partition_key, n)
    SELECT v.k, v.d
      FROM (VALUES (OLD.partition_key, -1::bigint), (NEW.partition_key, 1::bigint)) v(k, d)
     ORDER BY v.k
    ON CONFLICT (partition_key) DO UPDATE SET n = c.n + excluded.n;
    DELETE FROM amrita_memory.partition_count c
     WHERE c.partition_key = OLD.partition_key AND c.n = 0;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION amrita_memory.partition_count_moved_v1() IS
'Row trigger on memory (AFTER UPDATE OF partition_key, key changed): moves one row from the old key''s count to the new key''s.';

-- After DELETE (statement): take the statement's deleted rows off their partitions'
-- counts; a count at 0 goes. A partition without a count row (it cannot be, unless the
-- triggers were off) gets a negative one, which partition_count_check_v1 reports.
CREATE OR REPLACE FUNCTION amrita_memory.partition_count_removed_v1()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO amrita_memory.partition_count AS c (partition_key, n)
    SELECT r.partition_key, -count(*)
      FROM removed r
     GROUP BY r.partition_key
     ORDER BY r.partition_key
    ON CONFLICT (partition_key) DO UPDATE SET n = c.n + excluded.n;
    DELETE FROM amrita_memory.partition_count c
     WHERE c.n = 0
       AND c.partition_key IN (SELECT r.partition_key FROM removed r);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION amrita_memory.partition_count_removed_v1() IS
'Statement trigger on memory (AFTER DELETE): takes the deleted rows off partition_count, partitions in key order; a count at 0 goes.';

-- After TRUNCATE of the memory table: no partition has rows.
CREATE OR REPLACE FUNCTION amrita_memory.partition_count_truncated_v1()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM amrita_memory.partition_count;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION amrita_memory.partition_count_truncated_v1() IS
'Statement trigger on memory (AFTER TRUNCATE): empties partition_count.';

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

CREATE TRIGGER partition_count_delete
    AFTER DELETE ON amrita_memory.memory
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT
    EXECUTE FUNCTION amrita_memory.partition_count_removed_v1();

CREATE TRIGGER partition_count_insert
    AFTER INSERT ON amrita_memory.memory
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT
    WHEN (current_setting('amrita_memory.count_by_writer', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION amrita_memory.partition_count_added_v1();

CREATE TRIGGER partition_count_truncate
    AFTER TRUNCATE ON amrita_memory.memory
    FOR EACH STATEMENT
    EXECUTE FUNCTION amrita_memory.partition_count_truncated_v1();

CREATE TRIGGER partition_count_update
    AFTER UPDATE OF partition_key ON amrita_memory.memory
    FOR EACH ROW
    WHEN (OLD.partition_key IS DISTINCT FROM NEW.partition_key)
    EXECUTE FUNCTION amrita_memory.partition_count_moved_v1();

