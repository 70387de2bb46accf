-- The memory's trail, release 2 (migration 0023_l2_fast, issue 24): the change-history
-- trigger without a query per changed memory. Released files are never edited.
--
-- record_memory_change_v2 is record_memory_change_v1 (read trail_v1.sql's header: what is
-- recorded, the actor, the pause, the bounds), except for the trim of each memory's
-- history to the newest history_keep rows: v1 probed every changed memory with its own
-- plpgsql query, so a sweep batch demoting or purging thousands of memories ran thousands
-- of queries; v2 finds the memories past the bound in ONE statement and visits only those.
-- Same rows kept, same rows written. The sweep keeps its per-memory history (a demotion is
-- an 'update', a purge a 'delete', by actor system): one row per memory it changes,
-- written set-wise by this statement trigger, so a person can still see why a memory
-- changed or went; what it no longer pays is a query per row.
--
-- The three triggers of trail_v1.sql are re-pointed at v2 here (the down file points them
-- back at v1).


CREATE OR REPLACE FUNCTION amrita_memory.record_memory_change_v2()
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
    v_deleting text[];
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
    v_deleting := v_parts;

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

    -- Per memory, the newest v_keep changes stay. Only a memory with more than v_keep
    -- changes has anything to cut: those are found in ONE statement (a probe of the
    -- primary key per changed memory, walking it backwards past v_keep rows), and only
    -- they are visited one at a time (cut = the (v_keep + 1)-th newest; the delete a
    -- range of that key). v1 ran the probe as one plpgsql query per changed memory: most
    -- of a sweep batch's history cost (a batch changes thousands of memories, nearly all
    -- with one or two changes).
    SELECT array_agg(u.partition_key), array_agg(u.memory_id) INTO v_parts, v_ids
      FROM (SELECT DISTINCT x.partition_key, x.memory_id
              FROM unnest(v_parts, v_ids) AS x(partition_key, memory_id)) u
     WHERE EXISTS (SELECT 1 FROM amrita_memory.memory_change c
                    WHERE c.partition_key = u.partition_key AND c.memory_id = u.memory_id
                    ORDER BY c.seq DESC
                   OFFSET v_keep LIMIT 1);
    FOR v_key, v_mid IN SELECT u.partition_key, u.memory_id
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
                 WHERE d.partition_key = ANY (v_deleting)
                   AND d.after IS NULL
                   AND d.at < now() - make_interval(days => v_days)) gone
         WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION amrita_memory.record_memory_change_v2() IS
'record_memory_change_v1 (history rows, access-log follow-up, pause refusal AMZ01, bounds) with the per-memory trim probe done set-wise in one statement: only memories past history_keep are visited one at a time.';


DROP TRIGGER IF EXISTS trail_memory_insert ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_update ON amrita_memory.memory;
DROP TRIGGER IF EXISTS trail_memory_delete ON amrita_memory.memory;
CREATE TRIGGER trail_memory_insert
    AFTER INSERT ON amrita_memory.memory
    REFERENCING NEW TABLE AS trail_new
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v2();
CREATE TRIGGER trail_memory_update
    AFTER UPDATE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old NEW TABLE AS trail_new
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v2();
CREATE TRIGGER trail_memory_delete
    AFTER DELETE ON amrita_memory.memory
    REFERENCING OLD TABLE AS trail_old
    FOR EACH STATEMENT EXECUTE FUNCTION amrita_memory.record_memory_change_v2();
