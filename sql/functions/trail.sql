-- The memory's trail: who recalled a memory (memory_access), who changed it
-- (memory_change, and the sweep's batch rows in sweep_change), and paused partitions
-- (paused_partition).
--
-- Bounds. memory_access keeps, per memory, the newest p_keep recalls by a search (tool,
-- /memory, CLI, web) and the newest p_keep injections into a turn, counted apart so that
-- the injection of every turn never pushes the searches out; the rows go with their
-- memory (the delete trigger below drops them, and moves them when a key migration
-- renames the partition). No foreign key: it would cost every logged row a lock on its
-- memory and forbid TRUNCATE of the memory table. memory_change keeps, per memory, the
-- newest amrita_memory.history_keep changes (default 20); the history of a deleted memory
-- is kept amrita_memory.history_keep_deleted_days (default 30) after its delete, then goes
-- when its partition next deletes something. The triggers keep both bounds in the writing
-- statement's own transaction; the sweep's changes are bounded once per run by
-- trim_history_v2. No job, no unbounded growth.
--
-- Who changed it. The storage layer sets, in the writing transaction,
--   SELECT set_config('amrita_memory.actor', 'person:10001', true)   -- kind:id
--   SELECT set_config('amrita_memory.op', 'merge', true)             -- optional
--   SELECT set_config('amrita_memory.note', '<kept id>', true)       -- optional
-- and the row triggers below read them: every path that writes the memory table
-- (functions, named queries, restore, import) is recorded without a version of each write
-- function knowing. Unset (a path that did not say) = kind 'system'. Actor kinds: person
-- (admin web, CLI, /memory: their id), llm (the chat tools: the chat's key), extraction,
-- l3 (the consolidation loop: its cycle), import, system (sweep, restore, key migration).
-- Content is stored as the memory table holds it; every surface that shows the history
-- passes it through domain/redact.py (the ONE redaction, Python), as it does the memory.
--
-- Writers that record their own history. A writing function may write its history rows
-- set-wise in its own statement (insert_memory_v6, the sweep): it sets the transaction
-- setting amrita_memory.history_by_writer = 'on' just before its statement on the memory
-- table and clears it just after (a failure rolls the setting back with the statement);
-- the triggers' WHEN skips its rows, so the trigger costs it nothing: a ROW-level AFTER
-- trigger's WHEN is evaluated per row when the event would be queued (false: nothing
-- queued, no plpgsql call), where a statement trigger's transition tables copy every row
-- written whatever its WHEN says. The setting is no access control: whoever may write the
-- memory table may also write memory_change.
--
-- Pause. An automatic actor (llm, extraction, l3) writing a paused partition is refused
-- with SQLSTATE AMZ01 and the statement rolls back; people, import and system writes go
-- through (a person manages a paused scope).


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


-- The fields a change history records of a memory, as jsonb. STABLE (what
-- jsonb_build_object is), so that PostgreSQL inlines it into the writing statement instead
-- of calling it per row.
CREATE OR REPLACE FUNCTION amrita_memory.memory_fields_v2(
    p_content text, p_tags text[], p_importance smallint, p_category text, p_scope text,
    p_source text)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT jsonb_build_object('content', p_content, 'tags', to_jsonb(p_tags),
                              'importance', p_importance, 'category', p_category,
                              'scope', p_scope, 'source', p_source)
$$;
COMMENT ON FUNCTION amrita_memory.memory_fields_v2(text, text[], smallint, text, text, text) IS
'The fields a change history records of a memory, as jsonb; STABLE, so that it is inlined into the writing statement instead of called per row.';


-- Keep the trail's history bounds over the whole table (see above): per memory the newest
-- p_keep changes, and no history of a memory deleted more than p_days ago. The memories
-- with more are found by one walk of memory_change's primary key (GROUP BY partition_key,
-- memory_id HAVING count(*) > p_keep, in key order, no sort), and only they are cut.
--   psql> SELECT * FROM amrita_memory.trim_history_v1(20, 30);
CREATE OR REPLACE FUNCTION amrita_memory.trim_history_v1(p_keep integer, p_days integer)
RETURNS TABLE (trimmed integer, expired integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_keep integer := greatest(p_keep, 1);
    v_key text;
    v_mid text;
    v_cut bigint;
    v_rows integer;
BEGIN
    trimmed := 0;
    FOR v_key, v_mid IN SELECT c.partition_key, c.memory_id
                          FROM amrita_memory.memory_change c
                         GROUP BY c.partition_key, c.memory_id
                        HAVING count(*) > v_keep
    LOOP
        SELECT c.seq INTO v_cut
          FROM amrita_memory.memory_change c
         WHERE c.partition_key = v_key AND c.memory_id = v_mid
         ORDER BY c.seq DESC
        OFFSET v_keep LIMIT 1;
        IF v_cut IS NOT NULL THEN
            DELETE FROM amrita_memory.memory_change h
             WHERE h.partition_key = v_key AND h.memory_id = v_mid AND h.seq <= v_cut;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            trimmed := trimmed + v_rows;
        END IF;
    END LOOP;

    DELETE FROM amrita_memory.memory_change h
     USING (SELECT DISTINCT d.partition_key, d.memory_id
              FROM amrita_memory.memory_change d
             WHERE d.after IS NULL
               AND d.at < now() - make_interval(days => p_days)) gone
     WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
       AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                        WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
    GET DIAGNOSTICS expired = ROW_COUNT;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION amrita_memory.trim_history_v1(integer, integer) IS
'The trail''s history bounds over the whole table: per memory the newest p_keep changes stay (trimmed = rows cut), and the history of memories deleted more than p_days ago goes (expired = rows removed). The sweep runs it once per run.';


-- The row trigger of every write of the memory table that does not record its own
-- history: the memory_change row (actor from current_actor_v1(); op 'create' / 'update' /
-- 'tag' / 'delete' or the 'merge' hint of amrita_memory.op; the note; the fields), the
-- access-log follow-up (a deleted memory's access rows go, a moved memory's follow its
-- partition_key), the AMZ01 refusal of an automatic actor on a paused partition, the bound
-- of the newest history_keep changes of the memory and, on a delete, the deleted-history
-- retention (history_keep_deleted_days) of its partition. The UPDATE trigger's WHEN also
-- skips an update that changes neither a shown field (content, tags, importance,
-- category, scope) nor partition_key: an embedding or search-token rewrite of every row
-- (re-embed switch, backfill) must not call plpgsql once per row.
CREATE OR REPLACE FUNCTION amrita_memory.record_memory_change_row_v1()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_kind text;
    v_id text;
    v_op text := nullif(current_setting('amrita_memory.op', true), '');
    v_note text := nullif(current_setting('amrita_memory.note', true), '');
    v_keep integer;
    v_days integer;
    v_key text;
    v_mark text;
    v_done text;
BEGIN
    IF v_op IS NOT NULL AND v_op NOT IN ('merge') THEN
        v_op := NULL;
    END IF;
    -- A move alone (no shown field changed: a key migration) records nothing, as in v2;
    -- the access log follows its memory to the new partition.
    IF TG_OP = 'UPDATE'
       AND (OLD.content, OLD.tags, OLD.importance, OLD.category, OLD.scope)
           IS NOT DISTINCT FROM (NEW.content, NEW.tags, NEW.importance, NEW.category, NEW.scope)
    THEN
        UPDATE amrita_memory.memory_access a
           SET partition_key = NEW.partition_key
         WHERE a.partition_key = OLD.partition_key AND a.memory_id = OLD.id
           AND OLD.partition_key <> NEW.partition_key;
        RETURN NULL;
    END IF;

    SELECT a.kind, a.id INTO v_kind, v_id FROM amrita_memory.current_actor_v1() a;
    v_key := CASE WHEN TG_OP = 'DELETE' THEN OLD.partition_key ELSE NEW.partition_key END;
    IF v_kind IN ('llm', 'extraction', 'l3')
       AND EXISTS (SELECT 1 FROM amrita_memory.paused_partition p WHERE p.partition_key = v_key)
    THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMZ01',
            MESSAGE = 'the memory of ' || v_key || ' is paused: automatic processes may not change it',
            HINT = 'resume it with `amrita-memory resume` or /memory resume';
    END IF;

    -- One statement per row: the history row, the bound (the newest v_keep changes of
    -- the memory stay: with the row being added, the existing ones up to the v_keep-th
    -- newest go) and the access-log follow-up (a deleted memory's rows go, a moved one's
    -- follow it).
    v_keep := greatest(amrita_memory.trail_setting_v1('amrita_memory.history_keep', 20), 1);
    IF TG_OP = 'INSERT' THEN
        WITH cut AS (
            SELECT c.seq FROM amrita_memory.memory_change c
             WHERE c.partition_key = NEW.partition_key AND c.memory_id = NEW.id
             ORDER BY c.seq DESC
            OFFSET v_keep - 1 LIMIT 1
        ), trimmed AS (
            DELETE FROM amrita_memory.memory_change h USING cut
             WHERE h.partition_key = NEW.partition_key AND h.memory_id = NEW.id
               AND h.seq <= cut.seq
        )
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        VALUES (NEW.partition_key, NEW.id, now(), v_kind, v_id, 'create', NULL,
                amrita_memory.memory_fields_v2(NEW.content, NEW.tags, NEW.importance,
                                               NEW.category, NEW.scope, NEW.source),
                v_note);
    ELSIF TG_OP = 'UPDATE' THEN
        WITH cut AS (
            SELECT c.seq FROM amrita_memory.memory_change c
             WHERE c.partition_key = NEW.partition_key AND c.memory_id = NEW.id
             ORDER BY c.seq DESC
            OFFSET v_keep - 1 LIMIT 1
        ), trimmed AS (
            DELETE FROM amrita_memory.memory_change h USING cut
             WHERE h.partition_key = NEW.partition_key AND h.memory_id = NEW.id
               AND h.seq <= cut.seq
        ), moved AS (
            UPDATE amrita_memory.memory_access a
               SET partition_key = NEW.partition_key
             WHERE a.partition_key = OLD.partition_key AND a.memory_id = OLD.id
               AND OLD.partition_key <> NEW.partition_key
        )
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        VALUES (NEW.partition_key, NEW.id, now(), v_kind, v_id,
                coalesce(v_op,
                         CASE WHEN OLD.content = NEW.content AND OLD.importance = NEW.importance
                                   AND OLD.category IS NOT DISTINCT FROM NEW.category
                                   AND OLD.scope = NEW.scope
                              THEN 'tag' ELSE 'update' END),
                amrita_memory.memory_fields_v2(OLD.content, OLD.tags, OLD.importance,
                                               OLD.category, OLD.scope, OLD.source),
                amrita_memory.memory_fields_v2(NEW.content, NEW.tags, NEW.importance,
                                               NEW.category, NEW.scope, NEW.source),
                v_note);
    ELSE
        WITH cut AS (
            SELECT c.seq FROM amrita_memory.memory_change c
             WHERE c.partition_key = OLD.partition_key AND c.memory_id = OLD.id
             ORDER BY c.seq DESC
            OFFSET v_keep - 1 LIMIT 1
        ), trimmed AS (
            DELETE FROM amrita_memory.memory_change h USING cut
             WHERE h.partition_key = OLD.partition_key AND h.memory_id = OLD.id
               AND h.seq <= cut.seq
        ), gone AS (
            DELETE FROM amrita_memory.memory_access a
             WHERE a.partition_key = OLD.partition_key AND a.memory_id = OLD.id
        )
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        VALUES (OLD.partition_key, OLD.id, now(), v_kind, v_id, coalesce(v_op, 'delete'),
                amrita_memory.memory_fields_v2(OLD.content, OLD.tags, OLD.importance,
                                               OLD.category, OLD.scope, OLD.source),
                NULL, v_note);

        -- The history of memories deleted more than v_days ago, in the partition deleting
        -- now: once per partition and statement (v2 ran it once per statement over the
        -- partitions deleting; it finds the same rows for every row of one statement,
        -- which all run after the statement's deletes). The partitions done are kept in a
        -- transaction setting, under the statement's start time.
        v_days := amrita_memory.trail_setting_v1('amrita_memory.history_keep_deleted_days', 30);
        v_mark := statement_timestamp()::text || '/' || v_days;
        v_done := current_setting('amrita_memory.trail_retained', true);
        IF v_done IS NULL OR split_part(v_done, chr(31), 1) <> v_mark THEN
            v_done := v_mark;
        END IF;
        IF position(chr(31) || OLD.partition_key || chr(31) IN v_done || chr(31)) > 0 THEN
            RETURN NULL;
        END IF;
        PERFORM set_config('amrita_memory.trail_retained', v_done || chr(31) || OLD.partition_key, true);
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT d.partition_key, d.memory_id
                  FROM amrita_memory.memory_change d
                 WHERE d.partition_key = OLD.partition_key
                   AND d.after IS NULL
                   AND d.at < now() - make_interval(days => v_days)) gone
         WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION amrita_memory.record_memory_change_row_v1() IS
'Row trigger on memory: the history row of one changed memory, its access-log follow-up, the pause refusal AMZ01 and the bounds; the triggers'' WHEN skips it under amrita_memory.history_by_writer = on.';

CREATE TRIGGER trail_memory_insert
    AFTER INSERT ON amrita_memory.memory
    FOR EACH ROW
    WHEN (current_setting('amrita_memory.history_by_writer', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION amrita_memory.record_memory_change_row_v1();

CREATE TRIGGER trail_memory_update
    AFTER UPDATE ON amrita_memory.memory
    FOR EACH ROW
    WHEN (current_setting('amrita_memory.history_by_writer', true) IS DISTINCT FROM 'on'
          AND ((OLD.content, OLD.tags, OLD.importance, OLD.category, OLD.scope, OLD.partition_key)
               IS DISTINCT FROM
               (NEW.content, NEW.tags, NEW.importance, NEW.category, NEW.scope, NEW.partition_key)))
    EXECUTE FUNCTION amrita_memory.record_memory_change_row_v1();

CREATE TRIGGER trail_memory_delete
    AFTER DELETE ON amrita_memory.memory
    FOR EACH ROW
    WHEN (current_setting('amrita_memory.history_by_writer', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION amrita_memory.record_memory_change_row_v1();


-- The sweep's batch rows, one row per memory they changed, as memory_change rows read
-- (before / after as memory_fields_v2 makes them); memory_ids stays a column so that a
-- filter on it reaches the table's GIN index.
--   psql> SELECT memory_id, op, before->>'importance', after->>'importance'
--           FROM amrita_memory.sweep_change_entry WHERE memory_ids @> ARRAY['<id>'];
CREATE OR REPLACE VIEW amrita_memory.sweep_change_entry AS
SELECT u.partition_key, u.memory_id, s.seq, s.at, s.actor_kind, s.actor_id, u.op,
       amrita_memory.memory_fields_v2(u.content, u.tags::text[], u.importance, u.category,
                                      u.scope, u.source) AS before,
       CASE WHEN u.new_importance IS NOT NULL
            THEN amrita_memory.memory_fields_v2(u.content, u.tags::text[], u.new_importance,
                                                u.category, u.scope, u.new_source) END AS after,
       s.note, s.memory_ids
  FROM amrita_memory.sweep_change s
 CROSS JOIN LATERAL unnest(s.partition_keys, s.memory_ids, s.ops, s.contents, s.tags,
                           s.importances, s.categories, s.scopes, s.sources, s.new_importances,
                           s.new_sources)
       AS u(partition_key, memory_id, op, content, tags, importance, category, scope, source,
            new_importance, new_source);
COMMENT ON VIEW amrita_memory.sweep_change_entry IS
'The sweep''s batch rows (sweep_change), one row per memory changed, as memory_change rows (before / after jsonb); filter on memory_ids to use the GIN index.';


-- A memory's history, newest first: its own rows and its entries in the sweep's batch rows.
CREATE OR REPLACE FUNCTION amrita_memory.memory_history_v1(
    p_partition text, p_memory text, p_limit integer)
RETURNS TABLE (
    partition_key text,
    memory_id text,
    seq bigint,
    at timestamptz,
    actor_kind text,
    actor_id text,
    op text,
    before jsonb,
    after jsonb,
    note text)
LANGUAGE sql STABLE
-- The planner does not count detoasting: a batch row's arrays live in TOAST, so a
-- sequential scan of sweep_change looks cheap and reads every batch's memory_ids (17 ms
-- at 300 batch rows of 2,000 memories; over the GIN index 1.4 ms).
SET enable_seqscan = off
AS $$
    SELECT h.partition_key, h.memory_id, h.seq, h.at, h.actor_kind, h.actor_id, h.op,
           h.before, h.after, h.note
      FROM (
            SELECT c.partition_key, c.memory_id, c.seq, c.at, c.actor_kind, c.actor_id, c.op,
                   c.before, c.after, c.note
              FROM amrita_memory.memory_change c
             WHERE c.partition_key = p_partition AND c.memory_id = p_memory
            UNION ALL
            SELECT e.partition_key, e.memory_id, e.seq, e.at, e.actor_kind, e.actor_id, e.op,
                   e.before, e.after, e.note
              FROM amrita_memory.sweep_change_entry e
             WHERE e.memory_ids @> ARRAY[p_memory]
               AND e.partition_key = p_partition AND e.memory_id = p_memory
           ) h
     ORDER BY h.seq DESC
     LIMIT p_limit
$$;
COMMENT ON FUNCTION amrita_memory.memory_history_v1(text, text, integer) IS
'A memory''s history, newest first (at most p_limit changes): its memory_change rows and its entries in the sweep''s batch rows (sweep_change_entry, over the GIN index on memory_ids), as memory_change rows.';


-- The trail's bounds (trim_history_v1's) and the sweep's batch rows: a sweep_change row
-- older than p_days goes, with the memory_change history of every memory it purged that
-- has not come back. The bound per memory counts memory_change rows only: a memory's sweep
-- entries stay their p_days beside its newest p_keep. It walks only the memories with rows
-- newer than the last trim (sweep_state.trimmed_seq, the sequence's last value when it
-- ran): the sweep adds none, and the paths that do (the row triggers) keep the bound per
-- statement themselves, so this is the safety net for rows written while it ran. The
-- whole table again when it never ran, the bound got smaller, or the sequence moved back
-- (a restore). The sweep runs it once at the end of every run that changed something.
--   psql> SELECT * FROM amrita_memory.trim_history_v2(20, 30);
CREATE OR REPLACE FUNCTION amrita_memory.trim_history_v2(p_keep integer, p_days integer)
RETURNS TABLE (trimmed integer, expired integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_keep integer := greatest(p_keep, 1);
    v_seq regclass := pg_get_serial_sequence('amrita_memory.memory_change', 'seq')::regclass;
    v_top bigint := coalesce(pg_sequence_last_value(v_seq), 0);
    v_from bigint;
    v_keep_before integer;
    v_rows integer;
BEGIN
    -- the watermark: one trim at a time (the row lock), the next one starts past it
    SELECT s.trimmed_seq, s.trimmed_keep INTO v_from, v_keep_before
      FROM amrita_memory.sweep_state s WHERE s.id = 1 FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO amrita_memory.sweep_state (id) VALUES (1) ON CONFLICT (id) DO NOTHING;
        v_from := 0;
    END IF;
    IF v_keep_before IS NULL OR v_keep < v_keep_before OR v_top < v_from THEN
        -- never trimmed, a smaller bound than last time, or the sequence moved back (a
        -- restore): the whole table, as trim_history_v1 walks it
        SELECT t.trimmed, t.expired INTO trimmed, expired
          FROM amrita_memory.trim_history_v1(v_keep, p_days) t;
    ELSE
        -- only the memories changed since: the newest v_keep rows of each stay
        WITH touched AS (
            SELECT DISTINCT c.partition_key, c.memory_id
              FROM amrita_memory.memory_change c
             WHERE c.seq > v_from
        ), cut AS (
            SELECT t.partition_key, t.memory_id,
                   (SELECT c.seq FROM amrita_memory.memory_change c
                     WHERE c.partition_key = t.partition_key AND c.memory_id = t.memory_id
                     ORDER BY c.seq DESC OFFSET v_keep LIMIT 1) AS seq
              FROM touched t
        ), gone AS (
            DELETE FROM amrita_memory.memory_change h
             USING cut
             WHERE cut.seq IS NOT NULL
               AND h.partition_key = cut.partition_key AND h.memory_id = cut.memory_id
               AND h.seq <= cut.seq
            RETURNING 1
        )
        SELECT count(*)::integer INTO trimmed FROM gone;
        -- the history of memories deleted more than p_days ago (trim_history_v1's)
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT d.partition_key, d.memory_id
                  FROM amrita_memory.memory_change d
                 WHERE d.after IS NULL
                   AND d.at < now() - make_interval(days => p_days)) gone
         WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
        GET DIAGNOSTICS expired = ROW_COUNT;
    END IF;

    -- the batch rows past the retention, and the earlier history of what they purged
    -- (a memory purged more than p_days ago that has not come back)
    WITH old AS (
        DELETE FROM amrita_memory.sweep_change s
         WHERE s.at < now() - make_interval(days => p_days)
        RETURNING s.partition_keys, s.memory_ids, s.new_importances
    ), entries AS (
        SELECT u.partition_key, u.memory_id, u.new_importance
          FROM old o
         CROSS JOIN LATERAL unnest(o.partition_keys, o.memory_ids, o.new_importances)
               AS u(partition_key, memory_id, new_importance)
    ), gone AS (
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT e.partition_key, e.memory_id FROM entries e
                 WHERE e.new_importance IS NULL) g
         WHERE h.partition_key = g.partition_key AND h.memory_id = g.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = g.partition_key AND m.id = g.memory_id)
        RETURNING 1
    )
    SELECT (SELECT count(*)::integer FROM entries) + (SELECT count(*)::integer FROM gone)
      INTO v_rows;
    expired := expired + v_rows;

    UPDATE amrita_memory.sweep_state s
       SET trimmed_seq = v_top, trimmed_keep = v_keep
     WHERE s.id = 1;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION amrita_memory.trim_history_v2(integer, integer) IS
'trim_history_v1''s bounds (per memory the newest p_keep memory_change rows; no history of a memory deleted more than p_days ago) walking only the memories with rows past the last trim''s watermark (sweep_state.trimmed_seq; the whole table when never trimmed, the bound got smaller or the sequence moved back), and the sweep''s batch rows older than p_days with the earlier history of the memories they purged (expired counts their entries and those rows). The sweep runs it once per run.';
