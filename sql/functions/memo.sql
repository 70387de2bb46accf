-- L1 memo writes.
--
-- Why functions: the cap (memo_max_chars, counted in characters, i.e. char_length,
-- the same as Python's len()) is enforced by the write itself, under the row lock that
-- INSERT … ON CONFLICT DO UPDATE takes. Two concurrent appends therefore serialise on
-- the row: the second one sees the first one's text, so no append is ever lost and the
-- cap holds exactly (the reference read the memo outside its lock and could lose one).
-- A refused write changes nothing and reports the would-be length and the current one,
-- so the LLM can compress and retry.
--
-- Both functions return one row:
--   applied        true when the memo was written
--   chars          the memo's length after the write, or the would-be length when refused
--   current_chars  the memo's length now (after the write, or unchanged when refused)
--   version        the row's version now (0 when no row exists); +1 on every write
-- Time is an argument (p_now), never now(), so writes are reproducible in tests.


-- Append p_addition on a new line ("current\naddition"; just "addition" when the memo
-- is empty), unless the result would exceed p_max_chars.
--   psql> SELECT * FROM amrita_memory.memo_append_v1('QQPlatform_Private_10001', '喜欢猫', 1000, now());
CREATE OR REPLACE FUNCTION amrita_memory.memo_append_v1(
    p_partition_key text, p_addition text, p_max_chars integer, p_now timestamptz)
RETURNS TABLE (applied boolean, chars integer, current_chars integer, version integer)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_chars integer;
    v_version integer;
    v_current text;
BEGIN
    -- One statement: the INSERT proposes nothing when the addition alone is too long;
    -- the conflict branch re-checks the length against the latest committed row.
    INSERT INTO amrita_memory.memo AS m (partition_key, content, version, updated_at)
    SELECT p_partition_key, p_addition, 1, p_now
    WHERE char_length(p_addition) <= p_max_chars
    ON CONFLICT (partition_key) DO UPDATE
        SET content = CASE WHEN m.content = '' THEN excluded.content
                           ELSE m.content || E'\n' || excluded.content END,
            version = m.version + 1,
            updated_at = excluded.updated_at
        WHERE char_length(m.content)
              + CASE WHEN m.content = '' THEN 0 ELSE 1 END
              + char_length(excluded.content) <= p_max_chars
    RETURNING char_length(m.content), m.version INTO v_chars, v_version;

    IF FOUND THEN
        RETURN QUERY SELECT true, v_chars, v_chars, v_version;
        RETURN;
    END IF;

    -- Refused: report what the text would have been and what it is (for the message only).
    SELECT m.content, m.version INTO v_current, v_version
    FROM amrita_memory.memo AS m
    WHERE m.partition_key = p_partition_key;
    v_current := coalesce(v_current, '');
    RETURN QUERY SELECT
        false,
        char_length(v_current)
            + CASE WHEN v_current = '' THEN 0 ELSE 1 END
            + char_length(p_addition),
        char_length(v_current),
        coalesce(v_version, 0);
END
$$;
COMMENT ON FUNCTION amrita_memory.memo_append_v1(text, text, integer, timestamptz) IS
'Append a line to a partition''s memo unless it would exceed p_max_chars characters (checked under the row lock); returns applied, chars, current_chars, version.';


-- Replace the whole memo with p_content ('' clears it), unless it exceeds p_max_chars.
--   psql> SELECT * FROM amrita_memory.memo_write_v1('QQPlatform_Group_20002', '', 1000, now());
CREATE OR REPLACE FUNCTION amrita_memory.memo_write_v1(
    p_partition_key text, p_content text, p_max_chars integer, p_now timestamptz)
RETURNS TABLE (applied boolean, chars integer, current_chars integer, version integer)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_chars integer;
    v_version integer;
BEGIN
    IF char_length(p_content) <= p_max_chars THEN
        INSERT INTO amrita_memory.memo AS m (partition_key, content, version, updated_at)
        VALUES (p_partition_key, p_content, 1, p_now)
        ON CONFLICT (partition_key) DO UPDATE
            SET content = excluded.content,
                version = m.version + 1,
                updated_at = excluded.updated_at
        RETURNING char_length(m.content), m.version INTO v_chars, v_version;
        RETURN QUERY SELECT true, v_chars, v_chars, v_version;
        RETURN;
    END IF;

    SELECT char_length(m.content), m.version INTO v_chars, v_version
    FROM amrita_memory.memo AS m
    WHERE m.partition_key = p_partition_key;
    RETURN QUERY SELECT false, char_length(p_content), coalesce(v_chars, 0), coalesce(v_version, 0);
END
$$;
COMMENT ON FUNCTION amrita_memory.memo_write_v1(text, text, integer, timestamptz) IS
'Replace a partition''s whole memo ('''' clears it) unless it exceeds p_max_chars characters; returns applied, chars, current_chars, version.';
