-- Statements about the server and the database rather than our tables
-- (amrita_memory_pg/storage/pg/database.py, storage/pg/migrate.py): the pgvector check,
-- the embedded server's database, the schema revision, what `status` shows. Most run on
-- a plain connection before the pool exists, some before the schema does.

-- name: pgvector_installed_version
-- The pgvector version created in this database (NULL = not created here).
SELECT extversion
  FROM pg_extension
 WHERE extname = 'vector';

-- name: pgvector_available_versions
-- The pgvector versions the server could create (none = the package is not installed).
SELECT version
  FROM pg_available_extension_versions
 WHERE name = 'vector';

-- name: vector_schema
-- The schema the vector type lives in, to register its binary codec on every pooled
-- connection (NULL = the extension is not created in this database).
SELECT n.nspname
  FROM pg_extension e
  JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE e.extname = 'vector';

-- name: database_exists
-- Whether database $1 exists on the server (the embedded server's own database is
-- created on first start).
SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS present;

-- name: create_database_ddl
-- The CREATE DATABASE statement for database $1, identifier quoted by format('%I')
-- (CREATE DATABASE takes no parameters, so the name goes into the text, never raw).
SELECT format('CREATE DATABASE %I', $1::text) AS ddl;

-- name: server_version
-- The server's version string, as `SHOW server_version` prints it.
SELECT current_setting('server_version') AS server_version;

-- name: revision_table_exists
-- Whether alembic's version table exists yet (it does not before the first upgrade,
-- and the revision query below would then fail to parse).
SELECT to_regclass('amrita_memory.alembic_version') IS NOT NULL AS present;

-- name: schema_revision
-- The migration revision the schema is at (alembic keeps one row; none = never stamped).
SELECT version_num
  FROM amrita_memory.alembic_version
 LIMIT 1;

-- name: lift_statement_timeout
-- No statement_timeout for one long maintenance statement (re-embed switch, index build,
-- restore, key migration): the pool's connections carry a short one.
-- $1 true: for the current transaction only (SET LOCAL); false: for the session, which
-- the pool's RESET ALL undoes on release. lock_timeout stays.
SELECT set_config('statement_timeout', '0', $1::boolean) AS statement_timeout;

-- name: begin_timeouts
-- Behind a transaction-mode pooler: sent after every BEGIN in the same simple
-- query, so the pool's statement and lock timeouts hold for that transaction only and
-- never stay on a server connection another client gets. {statement_ms} / {lock_ms}
-- are integers (milliseconds) formatted in by storage/pg/timeouts.py: a simple query
-- takes no parameters. set_config(..., true) = SET LOCAL.
SELECT set_config('statement_timeout', '{statement_ms}', true),
       set_config('lock_timeout', '{lock_ms}', true);
