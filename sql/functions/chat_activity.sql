-- Chat log and activity heatmap: the inputs of the L3 consolidation loop (which reads
-- recent conversation and plans its run in the user's idle window). Time is an argument
-- (p_now); the local weekday/slot of the heatmap is computed by the caller
-- (amrita_memory_pg.domain.activity.heat_cell) so that the time-zone rule, including the
-- reference's fallback for an invalid zone, lives in one pure function.


-- Append one chat line and keep only the newest p_keep lines of its session, so the
-- table stays bounded without a separate cleanup job. "Newest" is by id (insertion
-- order), not created_at, because callers may pass any p_now. Returns the new id.
--   psql> SELECT amrita_memory.chat_log_append_v1('QQPlatform_Group_1', '10001', '1', 'user', '早', now(), 200);
CREATE OR REPLACE FUNCTION amrita_memory.chat_log_append_v1(
    p_session_key text, p_user_id text, p_group_id text, p_role text, p_text text,
    p_now timestamptz, p_keep integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_id bigint;
    v_cut bigint;
BEGIN
    INSERT INTO amrita_memory.chat_log (session_key, user_id, group_id, role, text, created_at)
    VALUES (p_session_key, p_user_id, p_group_id, p_role, p_text, p_now)
    RETURNING id INTO v_id;

    -- The (p_keep + 1)-th newest line and everything older go (the line just written
    -- always stays); walks the (session_key, id) index backwards, so the cost is
    -- O(p_keep), not O(table).
    SELECT c.id INTO v_cut
    FROM amrita_memory.chat_log AS c
    WHERE c.session_key = p_session_key
    ORDER BY c.id DESC
    OFFSET greatest(p_keep, 1) LIMIT 1;
    IF v_cut IS NOT NULL THEN
        DELETE FROM amrita_memory.chat_log AS c
        WHERE c.session_key = p_session_key AND c.id <= v_cut;
    END IF;
    RETURN v_id;
END
$$;
COMMENT ON FUNCTION amrita_memory.chat_log_append_v1(text, text, text, text, text, timestamptz, integer) IS
'Append one chat line to its session and keep only the newest p_keep lines (by id); returns the new id.';


-- Count one observed user message in its heatmap cell: weekday 0 = Monday … 6 = Sunday,
-- slot = local hour / 2 (0…11), the 7 × 12 grid of the idle-window planner (reference
-- §9.1/§9.3). Raw counts plus the last time the cell was hit, so the planner can apply
-- its exponential decay at read time. One upsert, safe under concurrent messages.
--   psql> SELECT amrita_memory.activity_touch_v1('QQPlatform_Private_10001', 2, 7, now());
CREATE OR REPLACE FUNCTION amrita_memory.activity_touch_v1(
    p_user_key text, p_weekday integer, p_slot integer, p_now timestamptz)
RETURNS void
LANGUAGE sql VOLATILE
AS $$
    INSERT INTO amrita_memory.activity_heatmap AS h (user_key, weekday, slot, hits, last_seen_at)
    VALUES (p_user_key, p_weekday::smallint, p_slot::smallint, 1, p_now)
    ON CONFLICT (user_key, weekday, slot) DO UPDATE
        SET hits = h.hits + 1,
            last_seen_at = greatest(h.last_seen_at, excluded.last_seen_at)
$$;
COMMENT ON FUNCTION amrita_memory.activity_touch_v1(text, integer, integer, timestamptz) IS
'Count one user message in its heatmap cell (weekday 0 = Monday, slot = local hour / 2); one upsert.';
