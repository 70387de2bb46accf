-- The admin page's background jobs as rows.
--
-- A backup, a sweep or a re-embed started from the admin page of ANY process of the
-- fleet is one row of amrita_memory.job: its progress, the process that runs it (owner,
-- 'host:pid:start') and that process's heartbeat. Every process's page reads the rows, so
-- a job is visible and cancellable from any of them; one job per kind runs across the
-- fleet (the partial unique index ux_job_one_running_per_kind, and job_start_v1 deciding
-- under a transaction-level advisory lock per kind).
--
-- A process that dies leaves its row 'running' with a heartbeat that stops. After
-- p_stale_seconds without one the row is dead: job_start_v1 marks such rows 'lost'
-- (claimed with FOR UPDATE SKIP LOCKED, so a reaper never waits behind a live
-- heartbeat's update, and two reapers never mark one row twice) before it decides, and
-- the list query shows them as lost meanwhile. A re-embed resumes when started again
-- (its staged rows are in the database); a backup or a sweep simply runs again.
--
-- Cancelling is a request (cancel_requested): the owner sees it on its next heartbeat
-- and stops the job; the owner alone writes the final state.
-- Time: p_now NULL = the database's clock, the one clock the fleet shares.


-- Start a job of p_kind as p_id for p_owner. Returns the job that runs the kind after the
-- call: started = true when it is p_id, else the live one that refused it.
CREATE OR REPLACE FUNCTION amrita_memory.job_start_v1(
    p_id text,
    p_kind text,
    p_started_by text,
    p_owner text,
    p_stale_seconds double precision,
    p_now timestamptz)
RETURNS TABLE (
    started boolean,
    id text,
    owner text,
    started_by text,
    started_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_live amrita_memory.job%ROWTYPE;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.job:' || p_kind, 0));
    -- the dead first: a running row whose process stopped heartbeating
    UPDATE amrita_memory.job j
       SET state = 'lost', finished_at = v_now,
           error = format('its process %s stopped (no heartbeat since %s)',
                          j.owner, j.heartbeat_at)
     WHERE j.id IN (SELECT s.id FROM amrita_memory.job s
                     WHERE s.kind = p_kind AND s.state = 'running'
                       AND s.heartbeat_at < v_now - make_interval(secs => p_stale_seconds)
                       FOR UPDATE SKIP LOCKED);
    SELECT * INTO v_live FROM amrita_memory.job j
     WHERE j.kind = p_kind AND j.state = 'running';
    IF FOUND THEN
        RETURN QUERY SELECT false, v_live.id, v_live.owner, v_live.started_by,
                            v_live.started_at;
        RETURN;
    END IF;
    -- the table stays small: the newest 50 finished jobs are kept, the rest go
    DELETE FROM amrita_memory.job j
     WHERE j.state <> 'running'
       AND j.id NOT IN (SELECT k.id FROM amrita_memory.job k WHERE k.state <> 'running'
                         ORDER BY k.started_at DESC LIMIT 50);
    INSERT INTO amrita_memory.job (id, kind, state, phase, done, total, started_by,
                                   started_at, owner, heartbeat_at)
    VALUES (p_id, p_kind, 'running', 'starting', 0, 0, p_started_by, v_now, p_owner, v_now);
    RETURN QUERY SELECT true, p_id, p_owner, p_started_by, v_now;
END;
$$;
COMMENT ON FUNCTION amrita_memory.job_start_v1(text, text, text, text, double precision, timestamptz) IS
'Start an admin-page job: one running job per kind across the fleet (advisory lock per kind); running rows without a heartbeat are marked lost first (FOR UPDATE SKIP LOCKED). See sql/functions/job.sql.';


-- The owner's heartbeat with the job's progress. Returns whether a cancel was requested
-- (NULL: the row is not this owner's running job any more, e.g. marked lost).
CREATE OR REPLACE FUNCTION amrita_memory.job_beat_v1(
    p_id text,
    p_owner text,
    p_phase text,
    p_done bigint,
    p_total bigint,
    p_now timestamptz)
RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    UPDATE amrita_memory.job j
       SET phase = p_phase, done = p_done, total = p_total,
           heartbeat_at = coalesce(p_now, clock_timestamp())
     WHERE j.id = p_id AND j.owner = p_owner AND j.state = 'running'
    RETURNING j.cancel_requested;
$$;
COMMENT ON FUNCTION amrita_memory.job_beat_v1(text, text, text, bigint, bigint, timestamptz) IS
    'The owner''s heartbeat with the job''s progress; returns whether a cancel was requested (NULL: not its running job).';


-- The owner records the end: p_state done | failed | cancelled.
CREATE OR REPLACE FUNCTION amrita_memory.job_finish_v1(
    p_id text,
    p_owner text,
    p_state text,
    p_phase text,
    p_done bigint,
    p_total bigint,
    p_result text,
    p_error text,
    p_now timestamptz)
RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    WITH ended AS (
        UPDATE amrita_memory.job j
           SET state = p_state, phase = p_phase, done = p_done, total = p_total,
               result = p_result, error = p_error,
               finished_at = coalesce(p_now, clock_timestamp()),
               heartbeat_at = coalesce(p_now, clock_timestamp())
         WHERE j.id = p_id AND j.owner = p_owner AND j.state = 'running'
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM ended);
$$;
COMMENT ON FUNCTION amrita_memory.job_finish_v1(text, text, text, text, bigint, bigint, text, text, timestamptz) IS
    'The owner records the job''s end: done, failed or cancelled.';


-- Ask the owner to stop a running job (from any process's page). Returns the job's state
-- (NULL: no such job); only a running job takes the request.
CREATE OR REPLACE FUNCTION amrita_memory.job_cancel_v1(p_id text, p_by text)
RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_state text;
BEGIN
    UPDATE amrita_memory.job j
       SET cancel_requested = true, cancelled_by = p_by
     WHERE j.id = p_id AND j.state = 'running'
    RETURNING j.state INTO v_state;
    IF v_state IS NULL THEN
        SELECT j.state INTO v_state FROM amrita_memory.job j WHERE j.id = p_id;
    END IF;
    RETURN v_state;
END;
$$;
COMMENT ON FUNCTION amrita_memory.job_cancel_v1(text, text) IS
    'Ask the owner of a running job to stop it (seen at its next heartbeat); returns the job''s state.';
