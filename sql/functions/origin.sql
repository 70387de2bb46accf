-- Where a memory came from: memory.origin.
--
-- Automatic extraction atomically replaces "the entries extraction made" of a partition,
-- and source = 'auto' also covers the chat model's write_memory, every memory moved in
-- from the old plugin and the L3 loop's merges: replacing every 'auto' row would delete
-- all of them. source keeps its meaning (user = a person's, protected; auto = automatic;
-- system), and origin says WHO made the row: the actor kind of the inserting transaction
-- (trail.sql), one of
--   person · llm (the chat tools) · extraction · l3 · import · system
-- and 'unknown' for rows written before origins were recorded whose maker no record
-- shows. Extraction replaces only source = 'auto' AND origin = 'extraction'
-- (sql/queries/seed.sql). A row changes owner with a change of what it says: when the
-- chat model or the loop rewrites an extracted memory, origin becomes llm or l3
-- (take_over_memory in sql/queries/seed.sql), so the next extraction leaves the
-- correction alone; a person's edit makes it source = 'user'.
--
-- The column's DEFAULT is actor_origin_v1(), so every insert path (insert/write/import
-- functions, named queries, restore) records its origin without a new version of each
-- write function; a restore names the column and keeps the origin the backup holds.


-- The origin of a row inserted now: the kind of amrita_memory.actor ('system' unset).
--   psql> SELECT amrita_memory.actor_origin_v1();
CREATE OR REPLACE FUNCTION amrita_memory.actor_origin_v1()
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT a.kind FROM amrita_memory.current_actor_v1() a
$$;
COMMENT ON FUNCTION amrita_memory.actor_origin_v1() IS
'Origin of a memory inserted in this transaction: the kind of the transaction setting amrita_memory.actor (person, llm, extraction, l3, import, system), system when unset. The DEFAULT of memory.origin.';


-- A person's edit takes the row over. When a person (actor kind 'person': the admin
-- page, the CLI, /memory) changes what a memory says — content, tags, importance,
-- category or scope — of an automatic row, the row becomes theirs: source = 'user', so
-- extraction no longer replaces it and, with protect_manual_memories, no automatic
-- process changes it again. origin keeps who first wrote it. The trigger's WHEN clause
-- (below) is evaluated without calling this function for every other update — the
-- sweep's demotions, re-embeds, token backfills — so those pay nothing.
CREATE OR REPLACE FUNCTION amrita_memory.person_takes_over_v1()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.source := 'user';
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION amrita_memory.person_takes_over_v1() IS
'BEFORE UPDATE row trigger on memory: a person''s edit of an automatic memory sets source = user (the row is theirs now; extraction replaces only origin = extraction AND source = auto).';

CREATE TRIGGER memory_person_takes_over
    BEFORE UPDATE ON amrita_memory.memory
    FOR EACH ROW
    WHEN (OLD.source = 'auto'
          AND current_setting('amrita_memory.actor', true) LIKE 'person:%'
          AND (OLD.content, OLD.tags, OLD.importance, OLD.category, OLD.scope)
              IS DISTINCT FROM (NEW.content, NEW.tags, NEW.importance, NEW.category, NEW.scope))
    EXECUTE FUNCTION amrita_memory.person_takes_over_v1();
