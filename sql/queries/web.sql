-- The admin web page (amrita_memory_pg/web): its lists and its audit log.
-- Operator pages, not per-message paths; every memory filter starts from the partition.

-- name: admin_audit_insert
-- One audited write of the admin page: $1 actor, $2 role, $3 client address, $4 action,
-- $5 partition key, $6 target id, $7 detail (jsonb), $8 whether it took, $9 when.
INSERT INTO amrita_memory.admin_audit
       (actor, role, client, action, partition_key, target_id, detail, ok, at)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9)
RETURNING id;

-- name: admin_audit_page
-- The newest audited writes, $1 rows from offset $2, optionally of one partition ($3,
-- NULL = all) or one action prefix ($4, NULL = all), each with the matching total.
SELECT id, at, actor, role, client, action, partition_key, target_id, detail::text AS detail,
       ok, count(*) OVER ()::integer AS total
  FROM amrita_memory.admin_audit
 WHERE ($3::text IS NULL OR partition_key = $3)
   AND ($4::text IS NULL OR left(action, length($4)) = $4)
 ORDER BY at DESC, id DESC
 LIMIT $1 OFFSET $2;

-- name: admin_partition_page
-- Partitions with their usage (the partition_usage view), those whose key contains $3
-- (NULL = all; strpos, so % and _ are literal), largest first, $1 rows from offset $2,
-- each with the matching total.
SELECT partition_key, memories, high, medium, low, scope_user, scope_group, scope_global,
       oldest, newest, content_bytes, memo_chars, count(*) OVER ()::integer AS total
  FROM amrita_memory.partition_usage
 WHERE $3::text IS NULL OR strpos(lower(partition_key), lower($3)) > 0
 ORDER BY memories DESC, partition_key
 LIMIT $1 OFFSET $2;

-- name: admin_memory_page
-- One page of partition $1's memories with the page's filters, each NULL = any: $4 scope,
-- $5 category, $6 source, $7..$8 importance range, $9 tags (ANY of them), $10 created at
-- or after; sorted by $11 (created | updated | importance, each _asc or _desc; ties by
-- id), $2 rows from offset $3, each with the matching total.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at, count(*) OVER ()::integer AS total
  FROM amrita_memory.memory
 WHERE partition_key = $1
   AND ($4::text IS NULL OR scope = $4)
   AND ($5::text IS NULL OR category = $5)
   AND ($6::text IS NULL OR source = $6)
   AND ($7::integer IS NULL OR importance >= $7)
   AND ($8::integer IS NULL OR importance <= $8)
   AND ($9::text[] IS NULL OR tags && $9)
   AND ($10::timestamptz IS NULL OR created_at >= $10)
 ORDER BY CASE WHEN $11::text = 'created_asc' THEN created_at END ASC,
          CASE WHEN $11::text = 'created_desc' THEN created_at END DESC,
          CASE WHEN $11::text = 'updated_asc' THEN updated_at END ASC,
          CASE WHEN $11::text = 'updated_desc' THEN updated_at END DESC,
          CASE WHEN $11::text = 'importance_asc' THEN importance END ASC,
          CASE WHEN $11::text = 'importance_desc' THEN importance END DESC,
          created_at DESC, id
 LIMIT $2 OFFSET $3;

-- name: web_session_insert
-- A logged-in session: $1 id, $2 role, $3 name, $4 password hash fingerprint, $5 client,
-- $6 now, $7 expiry. Sessions expired for a day are dropped in the same statement.
WITH gone AS (
    DELETE FROM amrita_memory.web_session WHERE expires_at < $6::timestamptz - interval '1 day'
)
INSERT INTO amrita_memory.web_session (id, role, name, password_fp, client, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: web_session_get
-- A session that still counts ($1 id, $2 now): not revoked, not expired; none otherwise.
SELECT role, name, password_fp
  FROM amrita_memory.web_session
 WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2;

-- name: web_session_revoke
-- Logout ($1 id, $2 now): the session stops counting in every process at once.
UPDATE amrita_memory.web_session SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL;

-- name: web_session_revoke_all
-- Log out everywhere ($1 now): every session still counting; the number revoked.
WITH revoked AS (
    UPDATE amrita_memory.web_session SET revoked_at = $1
     WHERE revoked_at IS NULL AND expires_at > $1
    RETURNING 1
)
SELECT count(*)::integer FROM revoked;

-- name: web_login_failed
-- One failed login of client $1 at $2; failures older than $3 are dropped.
WITH gone AS (
    DELETE FROM amrita_memory.web_login_failure WHERE at < $3
)
INSERT INTO amrita_memory.web_login_failure (client, at) VALUES ($1, $2);

-- name: web_login_failures
-- Client $1's failed logins since $2: how many, and the oldest (when the wait ends).
SELECT count(*)::integer AS failures, min(at) AS oldest
  FROM amrita_memory.web_login_failure
 WHERE client = $1 AND at > $2;

-- name: admin_overview_counts
-- Memories counted by scope, by category (NULL shown as '') and by source, across every
-- partition: one row per (dimension, value).
SELECT 'scope' AS dimension, scope AS value, count(*)::integer AS n
  FROM amrita_memory.memory GROUP BY scope
UNION ALL
SELECT 'category', coalesce(category, ''), count(*)::integer
  FROM amrita_memory.memory GROUP BY category
UNION ALL
SELECT 'source', source, count(*)::integer
  FROM amrita_memory.memory GROUP BY source
ORDER BY 1, 3 DESC, 2;

-- name: admin_overview_daily
-- Per day in time zone $2 from $1 on: memories written (created), recalls logged and L3
-- tokens (prompt + completion), each day once even when nothing happened.
WITH days AS (
    SELECT generate_series(($1::timestamptz AT TIME ZONE $2)::date,
                           (now() AT TIME ZONE $2)::date, interval '1 day')::date AS day
), written AS (
    SELECT (created_at AT TIME ZONE $2)::date AS day, count(*)::integer AS n
      FROM amrita_memory.memory WHERE created_at >= $1 GROUP BY 1
), recalls AS (
    SELECT (at AT TIME ZONE $2)::date AS day, count(*)::integer AS n
      FROM amrita_memory.memory_access WHERE at >= $1 GROUP BY 1
), tokens AS (
    SELECT (created_at AT TIME ZONE $2)::date AS day,
           sum(prompt_tokens + completion_tokens)::bigint AS n
      FROM amrita_memory.token_usage WHERE created_at >= $1 GROUP BY 1
)
SELECT d.day, coalesce(w.n, 0) AS written, coalesce(r.n, 0) AS recalls,
       coalesce(t.n, 0)::bigint AS tokens
  FROM days d
  LEFT JOIN written w USING (day)
  LEFT JOIN recalls r USING (day)
  LEFT JOIN tokens t USING (day)
 ORDER BY d.day;
