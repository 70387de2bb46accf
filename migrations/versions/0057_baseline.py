"""The baseline: the schema of 0.14.0 and 0.14.1, the oldest this code upgrades from.

Revision ID: 0057_retire_release12
Revises:
Create Date: 2026-12-06

The 57 revisions 0001_foundation … 0057_retire_release12 squashed into one. Its revision id
is the last of them, so a database 0.14.0 or 0.14.1 migrated is at the baseline already
and upgrades on from here; an older one is refused with the release to upgrade it with
first (``storage/pg/migrate.py`` ``unsupported_revision``). Those revisions, with the why
of every step, are in git: ``git log v0.14.1 -- migrations/versions``.

An empty database upgraded to head does not run this: it gets the present schema in one
step (``storage/pg/install.py``). This runs when a database is upgraded to a named
revision from empty, as the tests do to prove that the baseline plus the migrations after
it equals the present (``tests/migration/test_present_schema.py``).

Upgrade: ``0057_baseline.sql`` (frozen, written by pg_dump) and the single rows. Downgrade:
every object of the schema but alembic's version table; pgvector stays (others may use it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from amrita_memory_pg.storage.pg.migrate import run_sql, run_sql_file
from amrita_memory_pg.storage.queries import query

revision: str = "0057_retire_release12"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA_SQL = Path(__file__).with_suffix(".sql")


def upgrade() -> None:
    run_sql(query("create_vector_extension"))
    # pg_dump's order: the functions first, before the tables their bodies name
    run_sql(query("function_body_checks_off"))
    run_sql_file(SCHEMA_SQL)
    run_sql(query("function_body_checks_on"))
    run_sql(
        """
        INSERT INTO amrita_memory.store_meta (id) VALUES (1);
        INSERT INTO amrita_memory.sweep_state (id) VALUES (1);
        INSERT INTO amrita_memory.backup_schedule (id) VALUES (1);
        """
    )


def downgrade() -> None:
    run_sql(
        """
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN SELECT c.oid::regclass AS name FROM pg_class c
                       JOIN pg_namespace n ON n.oid = c.relnamespace
                      WHERE n.nspname = 'amrita_memory' AND c.relkind = 'v' LOOP
                EXECUTE format('DROP VIEW %s CASCADE', r.name);
            END LOOP;
            FOR r IN SELECT c.oid::regclass AS name FROM pg_class c
                       JOIN pg_namespace n ON n.oid = c.relnamespace
                      WHERE n.nspname = 'amrita_memory' AND c.relkind = 'r'
                        AND c.relname <> 'alembic_version' LOOP
                EXECUTE format('DROP TABLE %s CASCADE', r.name);
            END LOOP;
            FOR r IN SELECT p.oid::regprocedure AS name FROM pg_proc p
                       JOIN pg_namespace n ON n.oid = p.pronamespace
                      WHERE n.nspname = 'amrita_memory' LOOP
                EXECUTE format('DROP FUNCTION %s CASCADE', r.name);
            END LOOP;
        END
        $$
        """
    )
