-- User profile writes.
--
-- A profile is a summary plus an array of body lines; element i of `lines` is line i
-- (0-based) for every reader and writer, so read and update cannot disagree on the
-- numbering (the reference's off-by-one, §15 B2). The edit itself (append, replace
-- [s, e), insert, delete) is the pure function amrita_memory_pg.domain.profile.
-- apply_edit; this function stores its result.
--
-- Why a compare-and-set: the caller read the profile at p_expected_version and computed
-- the new content from it. The row lock (FOR UPDATE) serialises concurrent saves; a save
-- whose expected version is no longer current changes nothing and reports the current
-- version, and the caller re-reads and re-applies its edit. So two concurrent edits
-- never lose each other's lines. A first write (expected version 0) races on the
-- primary key instead: INSERT … ON CONFLICT DO NOTHING lets exactly one win.
--
-- Every applied save appends one profile_history row (who, what, old and new content)
-- and deletes the rows older than the newest p_keep of that profile, in the same
-- transaction. Time is an argument (p_now), never now().


-- Save a profile if it is still at p_expected_version.
-- Returns one row: saved (true when written) and new_version (the version now: the new
-- one when saved; the current one, or NULL after a lost first-write race, when not).
--   psql> SELECT * FROM amrita_memory.profile_save_v1('QQPlatform_Private_10001', 0, '喜欢猫的学生',
--           ARRAY['养了一只橘猫'], 'append 1 lines', 'cli', current_user, NULL, 20, now());
CREATE OR REPLACE FUNCTION amrita_memory.profile_save_v1(
    p_partition_key text, p_expected_version integer, p_summary text, p_lines text[],
    p_operation text, p_actor_kind text, p_actor text, p_cycle_id bigint, p_keep integer,
    p_now timestamptz)
RETURNS TABLE (saved boolean, new_version integer)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_old_summary text;
    v_old_lines text[];
    v_version integer;
BEGIN
    SELECT p.summary, p.lines, p.version
      INTO v_old_summary, v_old_lines, v_version
      FROM amrita_memory.profile AS p
     WHERE p.partition_key = p_partition_key
       FOR UPDATE;

    IF NOT FOUND THEN
        IF p_expected_version <> 0 THEN
            RETURN QUERY SELECT false, 0;
            RETURN;
        END IF;
        INSERT INTO amrita_memory.profile AS p (partition_key, summary, lines, version, updated_at)
        VALUES (p_partition_key, p_summary, p_lines, 1, p_now)
        ON CONFLICT (partition_key) DO NOTHING;
        IF NOT FOUND THEN  -- a concurrent first write committed first
            RETURN QUERY SELECT false, NULL::integer;
            RETURN;
        END IF;
        v_old_summary := '';
        v_old_lines := '{}';
        v_version := 1;
    ELSIF v_version <> p_expected_version THEN
        RETURN QUERY SELECT false, v_version;
        RETURN;
    ELSE
        v_version := v_version + 1;
        UPDATE amrita_memory.profile AS p
           SET summary = p_summary, lines = p_lines, version = v_version, updated_at = p_now
         WHERE p.partition_key = p_partition_key;
    END IF;

    INSERT INTO amrita_memory.profile_history AS h
        (partition_key, version, operation, actor_kind, actor, cycle_id,
         old_summary, old_lines, new_summary, new_lines, changed_at)
    VALUES (p_partition_key, v_version, p_operation, p_actor_kind, p_actor, p_cycle_id,
            v_old_summary, v_old_lines, p_summary, p_lines, p_now);
    -- Keep the newest p_keep changes of this profile (the primary key's prefix).
    DELETE FROM amrita_memory.profile_history AS h
     WHERE h.partition_key = p_partition_key AND h.version <= v_version - greatest(p_keep, 1);

    RETURN QUERY SELECT true, v_version;
END
$$;
COMMENT ON FUNCTION amrita_memory.profile_save_v1(text, integer, text, text[], text, text, text, bigint, integer, timestamptz) IS
'Store a profile''s new summary and lines if its version is still p_expected_version (0 = no profile yet): row-locked compare-and-set, one profile_history row (old and new content, who, cycle), history trimmed to the newest p_keep. Returns saved, new_version.';
