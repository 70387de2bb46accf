-- The admin page's background jobs of the whole fleet (amrita_memory_pg/storage/jobs.py);
-- the functions and what "lost" means are sql/functions/job.sql.

-- name: job_start
-- Start job $1 of kind $2 for operator $3 in process $4; rows without a heartbeat for $5
-- seconds are lost first; $6 now (NULL: the database's clock).
SELECT started, id, owner, started_by, started_at
  FROM amrita_memory.job_start_v1($1, $2, $3, $4, $5, $6);

-- name: job_beat
-- Owner $2's heartbeat of job $1 with its phase $3 and progress $4 of $5 at $6; returns
-- cancel_requested (NULL: not this owner's running job any more).
SELECT amrita_memory.job_beat_v1($1, $2, $3, $4, $5, $6) AS cancel_requested;

-- name: job_finish
-- Owner $2 ends job $1 as $3 (done | failed | cancelled) with its last progress $4 $5 $6,
-- result $7, error $8, at $9.
SELECT amrita_memory.job_finish_v1($1, $2, $3, $4, $5, $6, $7, $8, $9) AS ended;

-- name: job_cancel
-- Ask the owner of job $1 to stop it, by operator $2; returns the job's state.
SELECT amrita_memory.job_cancel_v1($1, $2) AS state;

-- name: job_list
-- The newest $1 jobs of every process; a running one whose heartbeat is older than $2
-- seconds at $3 (NULL: now) is shown as lost (its process died).
SELECT id, kind,
       CASE WHEN state = 'running'
                 AND heartbeat_at < coalesce($3::timestamptz, clock_timestamp())
                                    - make_interval(secs => $2::double precision)
            THEN 'lost' ELSE state END AS state,
       phase, done, total, started_by, started_at, finished_at, owner, heartbeat_at,
       cancel_requested, cancelled_by, result, error
  FROM amrita_memory.job
 ORDER BY started_at DESC, id
 LIMIT $1;

-- name: job_get
-- One job by id, "lost" as in job_list.
SELECT id, kind,
       CASE WHEN state = 'running'
                 AND heartbeat_at < coalesce($3::timestamptz, clock_timestamp())
                                    - make_interval(secs => $2::double precision)
            THEN 'lost' ELSE state END AS state,
       phase, done, total, started_by, started_at, finished_at, owner, heartbeat_at,
       cancel_requested, cancelled_by, result, error
  FROM amrita_memory.job
 WHERE id = $1;
