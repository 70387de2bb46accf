-- A pause means paused on every write path. The trail's triggers refuse automatic writes
-- to a paused partition's MEMORIES (SQLSTATE AMZ01, trail.sql); the same rule holds for
-- the partition's memo (L1) and its user profile: a row
-- trigger on each table refuses an INSERT, UPDATE or DELETE by an automatic actor
-- (amrita_memory.actor kind llm, extraction or l3: the chat tools, extraction, the
-- consolidation loop) while the partition is in amrita_memory.paused_partition, with the
-- same SQLSTATE, so every caller maps it the one way it maps a paused memory write.
-- People (person), import and system writes go through: a person manages a paused scope.
-- Cost: one indexed lookup per written row, and only for an automatic actor.


-- Refuse this row's write when an automatic actor writes a paused partition.
--   psql> SELECT set_config('amrita_memory.actor', 'llm:qq_private_1', true);
--   psql> UPDATE amrita_memory.memo SET content = '' WHERE partition_key = '<paused>';  -- AMZ01
CREATE OR REPLACE FUNCTION amrita_memory.refuse_paused_write_v1()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_key text;
BEGIN
    IF (SELECT kind FROM amrita_memory.current_actor_v1()) IN ('llm', 'extraction', 'l3') THEN
        v_key := CASE WHEN TG_OP = 'DELETE' THEN OLD.partition_key ELSE NEW.partition_key END;
        IF EXISTS (SELECT 1 FROM amrita_memory.paused_partition p WHERE p.partition_key = v_key) THEN
            RAISE EXCEPTION USING
                ERRCODE = 'AMZ01',
                MESSAGE = 'the memory of ' || v_key || ' is paused: automatic processes may not change its '
                          || TG_TABLE_NAME,
                HINT = 'resume it with `amrita-memory resume` or /memory resume';
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION amrita_memory.refuse_paused_write_v1() IS
'Row trigger on memo and profile: refuses a write by an automatic actor (amrita_memory.actor kind llm, extraction, l3) to a paused partition with SQLSTATE AMZ01, as the trail triggers do for memories.';

CREATE TRIGGER pause_memo
    BEFORE INSERT OR UPDATE OR DELETE ON amrita_memory.memo
    FOR EACH ROW EXECUTE FUNCTION amrita_memory.refuse_paused_write_v1();

CREATE TRIGGER pause_profile
    BEFORE INSERT OR UPDATE OR DELETE ON amrita_memory.profile
    FOR EACH ROW EXECUTE FUNCTION amrita_memory.refuse_paused_write_v1();
