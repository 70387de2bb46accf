-- The kept row count of each partition (amrita_memory.partition_count): what the cap of
-- every insert reads (insert_memory_v7, write_memory_v6, import_memory_v2) instead of
-- counting the partition's rows. Counting cost as much as the partition is large: a
-- write into a 50,000-row group spent 20 ms of its 20 ms in count(*) (docs/performance.md).
--
-- Kept by triggers on the memory table, in the transaction of the change: a statement's
-- inserted rows (its NEW TABLE) and deleted rows (its OLD TABLE) are counted by partition
-- and added to the partition's row, and an update that moves a row to another partition
-- (the key migration's rename) moves one from the old key's count to the new one's. So
-- every path is counted without knowing it: the inserts, the chat tool's write, imports,
-- COPY (a restore, the scale bench's load), deletes, forget and erasure, the sweep's purge,
-- L3 merges, and the previous release's functions during a rolling upgrade (they still
-- count the rows themselves, and their writes keep the count right all the same). A
-- partition's row goes when its count reaches 0 (an erased partition leaves no key here);
-- a TRUNCATE of the memory table empties the table.
--
-- Exact under concurrency. The count changes only in the transaction that changes the
-- rows, under the row lock of the partition's count row, taken in partition key order
-- (the statement's partitions sorted, so a delete over many partitions and an insert
-- cannot deadlock on two count rows); an uncommitted change is not seen, as the rows it
-- changed are not. Writers of one partition serialise on its count row anyway (the cap's
-- advisory lock already orders them); writers of different partitions touch different
-- rows. The cap reads the count after taking the partition's advisory lock: the writer
-- before it committed both its row and its count. A delete running beside an insert
-- makes the insert see the count before the delete (as count(*) saw the rows): the cap
-- errs towards refusing, never past it.
--
-- Cost. A statement trigger with transition tables keeps a copy of every row the statement
-- inserts or deletes until the statement ends (in work_mem, then a temporary file): one
-- row for a chat write, a batch for the sweep's purge, the whole file for a restore's COPY
-- (measured in docs/performance.md). Updates other than a partition move cost nothing: a
-- row trigger whose WHEN is false queues nothing.
--
-- The hot write counts its own row. insert_memory_v7 sets the transaction setting
-- amrita_memory.count_by_writer = 'on' just around its INSERT of one row and adds that
-- row to the count itself (one upsert), and the insert trigger's WHEN skips the
-- statement: the trigger's call and its query over the transition table cost the write
-- about a fifth of its time in the server (measured in docs/performance.md). Every other
-- insert, the previous release's included, leaves the setting unset and is counted by
-- the trigger. As with amrita_memory.history_by_writer (trail.sql), the setting is no
-- access control: whoever may write the memory table may write partition_count.
--
-- Repair: partition_count_check_v1 below lists a partition whose count differs from its
-- rows (a trigger disabled by hand, session_replication_role = replica) and repairs it.


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

CREATE TRIGGER partition_count_insert
    AFTER INSERT ON amrita_memory.memory
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT
    WHEN (current_setting('amrita_memory.count_by_writer', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION amrita_memory.partition_count_added_v1();

CREATE TRIGGER partition_count_delete
    AFTER DELETE ON amrita_memory.memory
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT
    EXECUTE FUNCTION amrita_memory.partition_count_removed_v1();

CREATE TRIGGER partition_count_update
    AFTER UPDATE OF partition_key ON amrita_memory.memory
    FOR EACH ROW
    WHEN (OLD.partition_key IS DISTINCT FROM NEW.partition_key)
    EXECUTE FUNCTION amrita_memory.partition_count_moved_v1();

CREATE TRIGGER partition_count_truncate
    AFTER TRUNCATE ON amrita_memory.memory
    FOR EACH STATEMENT
    EXECUTE FUNCTION amrita_memory.partition_count_truncated_v1();


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
