-- Leases: which process of the fleet runs a piece of long work.
--
-- Several bot processes share one database: each schedules every L3 target, the sweep
-- and the session-expiry job. Before such work a process claims a lease on
-- (kind, lease_key) — kinds: l3 (key: the target partition), extraction (the session key,
-- or 'expiry' for the whole session job), sweep, reembed, backup ('' = the one of the
-- fleet). Only the holder works; the others are told who holds it and try again at
-- their next window.
--
-- Why a lease ROW with an expiry, claimed under a TRANSACTION-level advisory lock:
--   * An L3 cycle spans model calls (seconds to minutes). A lock held for the whole work
--     would need a transaction (or a session) open across those calls: a transaction
--     open that long holds back vacuum and keeps a pooled connection busy doing
--     nothing, and a session-level advisory lock does not survive PgBouncer in
--     transaction mode (the next transaction may run on another server connection, and
--     the lock stays with whoever gets this one). So the lock covers only the claim —
--     one short statement — and the row records the holder for the long work.
--   * The advisory lock (pg_advisory_xact_lock, released at commit) serialises claims of
--     one key, so reading the current holder and replacing an expired one are one
--     decision: the loser always learns the holder it lost to. Claims of other keys
--     never wait.
--   * A killed process cannot release its row: the row expires. The holder renews
--     expires_at with a heartbeat (every third of the TTL); a process that died (kill
--     -9, lost host, lost network) stops renewing, and after the TTL any other process
--     takes the lease over, recording whose expired lease it replaced (previous_owner).
--   * The row is visible: the admin page and `amrita-memory status` can say who holds
--     what, which a lock cannot.
--
-- owner: 'host:pid:start' of the holding process (the start time tells a restarted
-- process with a reused pid apart). token: random per claim, so the same process
-- claiming twice (two tasks) is two claims, and only the claim that holds the lease
-- renews or releases it.
--
-- Time: p_now NULL means the database's clock (clock_timestamp()), the one clock every
-- host of the fleet shares; tests pass p_now to move time. TTL in seconds (> 0).


-- Claim (p_kind, p_key) for p_owner/p_token for p_ttl_seconds from p_now. Returns one
-- row: acquired, and the holder after the call (owner, token, expires_at), plus
-- previous_owner when an expired lease of another owner was taken over.
--   psql> SELECT * FROM amrita_memory.lease_acquire_v1('l3', 'QQPlatform_Private_10001',
--           'host:123:20261204T051200Z', 'a-token', 60, NULL);
CREATE OR REPLACE FUNCTION amrita_memory.lease_acquire_v1(
    p_kind text,
    p_key text,
    p_owner text,
    p_token text,
    p_ttl_seconds double precision,
    p_now timestamptz)
RETURNS TABLE (
    acquired boolean,
    owner text,
    token text,
    expires_at timestamptz,
    previous_owner text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_held amrita_memory.lease%ROWTYPE;
BEGIN
    IF p_ttl_seconds IS NULL OR p_ttl_seconds <= 0 THEN
        RAISE EXCEPTION 'lease TTL must be positive, got %', p_ttl_seconds
            USING ERRCODE = '22023';
    END IF;
    -- one claim of this key at a time; released at commit (never session-level)
    PERFORM pg_advisory_xact_lock(
        hashtextextended('amrita_memory.lease:' || p_kind || ':' || p_key, 0));
    SELECT * INTO v_held FROM amrita_memory.lease l
     WHERE l.kind = p_kind AND l.lease_key = p_key;
    IF FOUND AND v_held.expires_at > v_now THEN
        RETURN QUERY SELECT false, v_held.owner, v_held.token, v_held.expires_at,
                            NULL::text;
        RETURN;
    END IF;
    INSERT INTO amrita_memory.lease AS l
           (kind, lease_key, owner, token, acquired_at, renewed_at, expires_at,
            previous_owner)
    VALUES (p_kind, p_key, p_owner, p_token, v_now, v_now,
            v_now + make_interval(secs => p_ttl_seconds),
            CASE WHEN v_held.owner IS NOT NULL THEN v_held.owner END)
    ON CONFLICT (kind, lease_key) DO UPDATE
       SET owner = EXCLUDED.owner, token = EXCLUDED.token,
           acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at,
           expires_at = EXCLUDED.expires_at, previous_owner = EXCLUDED.previous_owner;
    RETURN QUERY SELECT true, p_owner, p_token,
                        v_now + make_interval(secs => p_ttl_seconds), v_held.owner;
END;
$$;
COMMENT ON FUNCTION amrita_memory.lease_acquire_v1(text, text, text, text, double precision, timestamptz) IS
'Claim a lease of long work (kind, key) under a transaction-level advisory lock; a live lease of another claim is refused with its holder, an expired one taken over. See sql/functions/lease.sql.';


-- The heartbeat: push the claim's expiry to p_now + p_ttl_seconds. false when the claim
-- no longer holds the lease (it expired and another process took it over, or it was
-- released): the caller has lost it and must say so.
CREATE OR REPLACE FUNCTION amrita_memory.lease_renew_v1(
    p_kind text,
    p_key text,
    p_token text,
    p_ttl_seconds double precision,
    p_now timestamptz)
RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    WITH renewed AS (
        UPDATE amrita_memory.lease l
           SET renewed_at = coalesce(p_now, clock_timestamp()),
               expires_at = coalesce(p_now, clock_timestamp())
                            + make_interval(secs => p_ttl_seconds)
         WHERE l.kind = p_kind AND l.lease_key = p_key AND l.token = p_token
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM renewed);
$$;
COMMENT ON FUNCTION amrita_memory.lease_renew_v1(text, text, text, double precision, timestamptz) IS
    'The heartbeat of a lease claim: its expiry pushed to now + TTL; false when the claim lost the lease.';


-- The end of the work: drop the claim's row (only this claim's: a lease another
-- process took over after an expiry stays theirs). true when it was still held.
CREATE OR REPLACE FUNCTION amrita_memory.lease_release_v1(
    p_kind text,
    p_key text,
    p_token text)
RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    WITH released AS (
        DELETE FROM amrita_memory.lease l
         WHERE l.kind = p_kind AND l.lease_key = p_key AND l.token = p_token
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM released);
$$;
COMMENT ON FUNCTION amrita_memory.lease_release_v1(text, text, text) IS
    'The end of the work: the claim''s lease row goes (another claim''s stays).';


-- A claim whose process is known dead (same host, its pid gone: the caller checked) is
-- replaced now instead of after its expiry: only if the row is still that claim's
-- (p_dead_token), so a live process that took it over meanwhile keeps it. Returns
-- whether p_owner/p_token now hold the lease.
CREATE OR REPLACE FUNCTION amrita_memory.lease_take_over_v1(
    p_kind text,
    p_key text,
    p_dead_token text,
    p_owner text,
    p_token text,
    p_ttl_seconds double precision,
    p_now timestamptz)
RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    WITH taken AS (
        UPDATE amrita_memory.lease l
           SET previous_owner = l.owner, owner = p_owner, token = p_token,
               acquired_at = coalesce(p_now, clock_timestamp()),
               renewed_at = coalesce(p_now, clock_timestamp()),
               expires_at = coalesce(p_now, clock_timestamp())
                            + make_interval(secs => p_ttl_seconds)
         WHERE l.kind = p_kind AND l.lease_key = p_key AND l.token = p_dead_token
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM taken);
$$;
COMMENT ON FUNCTION amrita_memory.lease_take_over_v1(text, text, text, text, text, double precision, timestamptz) IS
    'Replace a claim whose process is known dead (same host, pid gone) before its expiry, if the row is still that claim''s.';
