-- Leases of long work across the fleet (amrita_memory_pg/storage/leases.py); the
-- functions and the reason for a row with an expiry are sql/functions/lease.sql.
-- $n::timestamptz NULL = the database's clock, the one clock the fleet shares.

-- name: lease_acquire
-- Claim ($1 kind, $2 key) for owner $3 / claim token $4, $5 seconds from $6.
SELECT acquired, owner, token, expires_at, previous_owner
  FROM amrita_memory.lease_acquire_v1($1, $2, $3, $4, $5, $6);

-- name: lease_renew
-- The heartbeat of claim $3 on ($1, $2): expiry pushed to $5 + $4 seconds; false = lost.
SELECT amrita_memory.lease_renew_v1($1, $2, $3, $4, $5) AS held;

-- name: lease_release
-- Claim $3 on ($1, $2) is done: its row goes (another owner's row stays).
SELECT amrita_memory.lease_release_v1($1, $2, $3) AS held;

-- name: lease_list
-- Every lease row (held or expired) with whether it is live at $1 (NULL: now), for the
-- status output and the admin page.
SELECT kind, lease_key, owner, acquired_at, renewed_at, expires_at, previous_owner,
       expires_at > coalesce($1::timestamptz, clock_timestamp()) AS live
  FROM amrita_memory.lease
 ORDER BY kind, lease_key;

-- name: lease_take_over
-- Replace dead claim $3 of ($1, $2) (its process is gone: same host, pid not running)
-- with owner $4 / claim $5 for $6 seconds from $7; false = the row is no longer it.
SELECT amrita_memory.lease_take_over_v1($1, $2, $3, $4, $5, $6, $7) AS taken;
