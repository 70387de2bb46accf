-- The memory's trail (issue 17, item 4), release 1 (migration 0019_trail): who recalled a
-- memory (memory_access), who changed it (memory_change), and paused partitions
-- (paused_partition). Released files are never edited: a change is a new file and a new
-- migration.
--
-- Bounds. memory_access keeps, per memory, the newest p_keep recalls by a search (tool,
-- /memory, CLI, web) and the newest p_keep injections into a turn, counted apart so that
-- the injection of every turn never pushes the searches out; the rows go with their
-- memory (the delete trigger below drops them, and moves them when a key migration
-- renames the partition). No foreign key: it would cost every logged row a lock on its
-- memory and forbid TRUNCATE of the memory table. memory_change keeps, per memory, the newest
-- amrita_memory.history_keep changes (default 20); the history of a deleted memory is
-- kept amrita_memory.history_keep_deleted_days (default 30) after its delete, then goes
-- when its partition next deletes something. Both trims are set-based SQL in the writing
-- statement's own transaction: no job, no unbounded growth.
--
-- Who changed it. The storage layer sets, in the writing transaction,
--   SELECT set_config('amrita_memory.actor', 'person:10001', true)   -- kind:id
--   SELECT set_config('amrita_memory.op', 'merge', true)             -- optional
--   SELECT set_config('amrita_memory.note', '<kept id>', true)       -- optional
-- and the statement-level triggers below read them: every path that writes the memory
-- table (functions of every release, named queries, restore, import, sweep) is recorded
-- without a new version of each write function. Unset (a path that did not say) = kind
-- 'system'. Actor kinds: person (admin web, CLI, /memory: their id), llm (the chat
-- tools: the chat's key), extraction, l3 (the consolidation loop: its cycle), import,
-- system (sweep, restore, key migration). Content is stored as the memory table holds
-- it; every surface that shows the history passes it through domain/redact.py (the ONE
-- redaction, Python), as it does the memory itself.
--
-- Pause. An automatic actor (llm, extraction, l3) writing a paused partition is refused
-- with SQLSTATE AMZ01 and the statement rolls back; people, import and system writes go
-- through (a person manages a paused scope; the sweep keeps its bounds).


-- The actor of the current transaction as (kind, id): the setting 'kind:id', or
-- ('system', NULL) when no caller said who it is.
--   psql> SELECT * FROM amrita_memory.current_actor_v1();
CREATE OR REPLACE FUNCTION amrita_memory.current_actor_v1(OUT kind text, OUT id text)
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN split_part(a, ':', 1) IN ('person', 'llm', 'extraction', 'l3', 'import', 'system')
                THEN split_part(a, ':', 1) ELSE 'system' END,
           nullif(substr(a, length(split_part(a, ':', 1)) + 2), '')
      FROM (SELECT coalesce(nullif(current_setting('amrita_memory.actor', true), ''), 'system') AS a) s
$$;
COMMENT ON FUNCTION amrita_memory.current_actor_v1() IS
'Who is writing in this transaction: the transaction-local setting amrita_memory.actor (''kind:id'') split, (system, NULL) when unset or of an unknown kind.';


-- A trail setting of the transaction as an integer, p_default when unset or not a number.
CREATE OR REPLACE FUNCTION amrita_memory.trail_setting_v1(p_name text, p_default integer)
RETURNS integer
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN v ~ '^[0-9]{1,9}$' THEN v::integer ELSE p_default END
      FROM (SELECT current_setting(p_name, true) AS v) s
$$;
COMMENT ON FUNCTION amrita_memory.trail_setting_v1(text, integer) IS
'Integer value of a transaction setting (amrita_memory.history_keep, amrita_memory.history_keep_deleted_days); p_default when unset or not a number.';


-- The fields a change history shows of one memory row.
CREATE OR REPLACE FUNCTION amrita_memory.memory_fields_v1(
    p_content text, p_tags text[], p_importance smallint, p_category text, p_scope text,
    p_source text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT jsonb_build_object('content', p_content, 'tags', to_jsonb(p_tags),
                              'importance', p_importance, 'category', p_category,
                              'scope', p_scope, 'source', p_source)
$$;
COMMENT ON FUNCTION amrita_memory.memory_fields_v1(text, text[], smallint, text, text, text) IS
'The fields of a memory a change history records (content, tags, importance, category, scope, source) as jsonb.';


-- Statement-level trigger function on amrita_memory.memory (INSERT, UPDATE, DELETE, each
-- its own trigger with its transition table): one memory_change row per memory whose
-- shown fields changed (an update of the embedding, the search tokens or the tier clock
-- only — re-embed, token backfill — is not a change anyone asked about), then the trims.
-- op: create | delete | update, 'tag' for an update of the tags alone, or the
-- transaction's amrita_memory.op ('merge') when set.
CREATE OR REPLACE FUNCTION amrita_memory.record_memory_change_v1()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_kind text;
    v_id text;
    v_op text := nullif(current_setting('amrita_memory.op', true), '');
    v_note text := nullif(current_setting('amrita_memory.note', true), '');
    v_keep integer := greatest(amrita_memory.trail_setting_v1('amrita_memory.history_keep', 20), 1);
    v_days integer := amrita_memory.trail_setting_v1('amrita_memory.history_keep_deleted_days', 30);
    v_paused text;
    v_parts text[];
    v_ids text[];
    v_key text;
    v_mid text;
    v_cut bigint;
BEGIN
    SELECT a.kind, a.id INTO v_kind, v_id FROM amrita_memory.current_actor_v1() a;
    IF v_op IS NOT NULL AND v_op NOT IN ('merge') THEN
        v_op := NULL;
    END IF;

    IF TG_OP = 'INSERT' THEN
        WITH ins AS (
            INSERT INTO amrita_memory.memory_change
                   (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
            SELECT n.partition_key, n.id, now(), v_kind, v_id, 'create', NULL,
                   amrita_memory.memory_fields_v1(n.content, n.tags, n.importance, n.category,
                                                  n.scope, n.source),
                   v_note
              FROM trail_new n
            RETURNING partition_key, memory_id)
        SELECT array_agg(partition_key), array_agg(memory_id) INTO v_parts, v_ids FROM ins;
    ELSIF TG_OP = 'UPDATE' THEN
        WITH ins AS (
            INSERT INTO amrita_memory.memory_change
                   (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
            SELECT n.partition_key, n.id, now(), v_kind, v_id,
                   coalesce(v_op,
                            CASE WHEN o.content = n.content AND o.importance = n.importance
                                      AND o.category IS NOT DISTINCT FROM n.category
                                      AND o.scope = n.scope
                                 THEN 'tag' ELSE 'update' END),
                   amrita_memory.memory_fields_v1(o.content, o.tags, o.importance, o.category,
                                                  o.scope, o.source),
                   amrita_memory.memory_fields_v1(n.content, n.tags, n.importance, n.category,
                                                  n.scope, n.source),
                   v_note
              FROM trail_old o JOIN trail_new n ON n.id = o.id
             WHERE (o.content, o.tags, o.importance, o.category, o.scope)
                   IS DISTINCT FROM (n.content, n.tags, n.importance, n.category, n.scope)
            RETURNING partition_key, memory_id)
        SELECT array_agg(partition_key), array_agg(memory_id) INTO v_parts, v_ids FROM ins;
    ELSE
        WITH ins AS (
            INSERT INTO amrita_memory.memory_change
                   (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
            SELECT o.partition_key, o.id, now(), v_kind, v_id, coalesce(v_op, 'delete'),
                   amrita_memory.memory_fields_v1(o.content, o.tags, o.importance, o.category,
                                                  o.scope, o.source),
                   NULL, v_note
              FROM trail_old o
            RETURNING partition_key, memory_id)
        SELECT array_agg(partition_key), array_agg(memory_id) INTO v_parts, v_ids FROM ins;
    END IF;
    -- The access log follows its memory: gone with it, renamed with its partition.
    IF TG_OP = 'DELETE' THEN
        DELETE FROM amrita_memory.memory_access a
         USING trail_old o
         WHERE a.partition_key = o.partition_key AND a.memory_id = o.id;
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE amrita_memory.memory_access a
           SET partition_key = n.partition_key
          FROM trail_old o JOIN trail_new n ON n.id = o.id
         WHERE o.partition_key <> n.partition_key
           AND a.partition_key = o.partition_key AND a.memory_id = o.id;
    END IF;
    IF v_ids IS NULL THEN
        RETURN NULL;
    END IF;

    IF v_kind IN ('llm', 'extraction', 'l3') THEN
        SELECT p.partition_key INTO v_paused
          FROM amrita_memory.paused_partition p
         WHERE p.partition_key = ANY (v_parts)
         LIMIT 1;
        IF v_paused IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'AMZ01',
                MESSAGE = 'the memory of ' || v_paused || ' is paused: automatic processes may not change it',
                HINT = 'resume it with `amrita-memory resume` or /memory resume';
        END IF;
    END IF;

    -- Per memory, the newest v_keep changes stay: the cut is the (v_keep + 1)-th newest,
    -- found walking the primary key backwards, and the delete a range of that key (one
    -- memory at a time: plan-proof, cost ~ changed memories × v_keep).
    FOR v_key, v_mid IN SELECT DISTINCT u.partition_key, u.memory_id
                          FROM unnest(v_parts, v_ids) AS u(partition_key, memory_id)
    LOOP
        SELECT c.seq INTO v_cut
          FROM amrita_memory.memory_change c
         WHERE c.partition_key = v_key AND c.memory_id = v_mid
         ORDER BY c.seq DESC
        OFFSET v_keep LIMIT 1;
        IF v_cut IS NOT NULL THEN
            DELETE FROM amrita_memory.memory_change h
             WHERE h.partition_key = v_key AND h.memory_id = v_mid AND h.seq <= v_cut;
        END IF;
    END LOOP;

    -- The history of memories deleted more than v_days ago, in the partitions deleting now.
    IF TG_OP = 'DELETE' THEN
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT d.partition_key, d.memory_id
                  FROM amrita_memory.memory_change d
                 WHERE d.partition_key = ANY (v_parts)
                   AND d.after IS NULL
                   AND d.at < now() - make_interval(days => v_days)) gone
         WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION amrita_memory.record_memory_change_v1() IS
'Statement trigger on memory: one memory_change row per memory whose shown fields changed, actor from amrita_memory.actor; drops (moves) the access log of deleted (re-keyed) memories; refuses automatic writes to a paused partition (SQLSTATE AMZ01); keeps the newest history_keep changes per memory and drops the history of memories deleted more than history_keep_deleted_days ago.';

CREATE TRIGGER trail_memory_insert
    AFTER INSERT ON amrita_memory.memory
    REFERENCING NEW TABLE AS trail_new
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v1();
CREATE TRIGGER trail_memory_update
    AFTER UPDATE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old NEW TABLE AS trail_new
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v1();
CREATE TRIGGER trail_memory_delete
    AFTER DELETE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v1();


-- Record that the memories p_ids (of the partitions p_partitions, pairwise) were recalled
-- at p_at through p_surface (tool | command | cli | web | l3 | inject | relevant), by chat
-- p_chat and speaker p_who, for p_query (redacted and cut by the caller) with p_scores
-- (NULL = none). Ids no longer there are skipped (nothing logged for a memory gone). Then, per
-- memory, only the newest p_keep rows of the logged surface's class stay (injections
-- and other recalls are kept apart).
-- Returns the rows written. One statement: the read path pays one round trip.
--   psql> SELECT amrita_memory.log_access_v1(ARRAY['global'], ARRAY['<id>'], NULL, now(),
--           'QQPlatform_Private_10001', '10001', '猫', 'tool', 20);
CREATE OR REPLACE FUNCTION amrita_memory.log_access_v1(
    p_partitions text[],
    p_ids text[],
    p_scores float8[],
    p_at timestamptz,
    p_chat text,
    p_who text,
    p_query text,
    p_surface text,
    p_keep integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    v_written integer;
    v_inject boolean := p_surface = 'inject';
    v_key text;
    v_id text;
    v_cut bigint;
BEGIN
    -- A log, not data: its transaction commits without waiting for the WAL flush (a
    -- crash may lose the last recalls, never a memory). The fsync was most of a logged
    -- read's cost (measured: 6 ms of 6.5 on a busy disk). Call it in its own statement
    -- (the storage layer does): the setting holds for the caller's whole transaction.
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO amrita_memory.memory_access
           (partition_key, memory_id, at, chat_key, who, query, score, surface)
    SELECT r.partition_key, r.memory_id, p_at, p_chat, p_who, p_query, r.score, p_surface
      FROM unnest(p_partitions, p_ids, coalesce(p_scores, '{}'::float8[]))
           AS r(partition_key, memory_id, score)
     WHERE r.memory_id IS NOT NULL
       AND EXISTS (SELECT 1 FROM amrita_memory.memory m
                    WHERE m.partition_key = r.partition_key AND m.id = r.memory_id);
    GET DIAGNOSTICS v_written = ROW_COUNT;

    -- The trim, one memory at a time: the cut is the (p_keep + 1)-th newest row of the
    -- logged surface's class, found walking the primary key (partition_key, memory_id,
    -- seq) backwards; the delete is a range of that key. Plan-proof (a set-based join
    -- let the planner loop the cut over every row: 30x slower), cost ~ ids × p_keep.
    FOR v_key, v_id IN SELECT DISTINCT u.partition_key, u.memory_id
                         FROM unnest(p_partitions, p_ids) AS u(partition_key, memory_id)
    LOOP
        SELECT l.seq INTO v_cut
          FROM amrita_memory.memory_access l
         WHERE l.partition_key = v_key AND l.memory_id = v_id
           AND (l.surface = 'inject') = v_inject
         ORDER BY l.seq DESC
        OFFSET greatest(p_keep, 1) LIMIT 1;
        IF v_cut IS NOT NULL THEN
            DELETE FROM amrita_memory.memory_access a
             WHERE a.partition_key = v_key AND a.memory_id = v_id AND a.seq <= v_cut
               AND (a.surface = 'inject') = v_inject;
        END IF;
    END LOOP;
    RETURN v_written;
END
$$;
COMMENT ON FUNCTION amrita_memory.log_access_v1(text[], text[], float8[], timestamptz, text, text, text, text, integer) IS
'Log one recall of memories (surface tool|command|cli|web|l3|inject|relevant, chat, speaker, redacted query, scores), skipping ids gone, and keep per memory the newest p_keep injections and p_keep other recalls. Returns rows written.';


-- After a search of ONE partition: whether it is paused (then nothing is logged and the
-- caller withholds the results), else log_access_v1 of its hits when p_log. One round
-- trip for both, so the read path pays one statement whatever the trail does.
--   psql> SELECT amrita_memory.recall_v1('global', ARRAY['<id>'], ARRAY[0.8], now(),
--           'QQPlatform_Private_10001', '10001', '猫', 'tool', 20, true);
CREATE OR REPLACE FUNCTION amrita_memory.recall_v1(
    p_partition text,
    p_ids text[],
    p_scores float8[],
    p_at timestamptz,
    p_chat text,
    p_who text,
    p_query text,
    p_surface text,
    p_keep integer,
    p_log boolean)
RETURNS boolean
LANGUAGE plpgsql
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM amrita_memory.paused_partition p WHERE p.partition_key = p_partition) THEN
        RETURN true;
    END IF;
    IF p_log AND coalesce(cardinality(p_ids), 0) > 0 THEN
        PERFORM amrita_memory.log_access_v1(
            array_fill(p_partition, ARRAY[cardinality(p_ids)]), p_ids, p_scores, p_at, p_chat,
            p_who, p_query, p_surface, p_keep);
    END IF;
    RETURN false;
END
$$;
COMMENT ON FUNCTION amrita_memory.recall_v1(text, text[], float8[], timestamptz, text, text, text, text, integer, boolean) IS
'After a search of one partition: true when the partition is paused (nothing logged; the caller withholds the hits), else false after logging the hits with log_access_v1 when p_log.';
