"""Retire SQL of release 11: drop the versions nothing calls now that the previous release
is 2548392 (sql/PREVIOUS_RELEASE.txt regenerated from it).

Revision ID: 0055_retire_release11
Revises: 0054_sweep_by_tid
Create Date: 2026-12-05

Dropped: sweep_batch_v6. 0054_sweep_by_tid kept it because the release before (040ab8c)
still called it; 2548392 calls sweep_batch_v7 (sweep_v7.sql) instead. The rest of
sweep_v6.sql (memory_history_v1, trim_history_v2, the history view) stays live.
sweep_action_v1 (decay_v1.sql) goes with it: v6 was its last caller, v7 decides by the
tiers' cutoffs (sweep_cutoff_v1), which tests/integration/test_sweep_v7.py holds to
sweep_action_v1's decision at every boundary (installed again there by the retired_sql
fixture).
Read from a migrated database with tests/support/sql_usage.py;
tests/migration/test_orphan_sql.py fails if this drops anything live or leaves an orphan.

Their files stay in sql/functions (released files are immutable, older migrations run
them); the downgrade re-installs them, with their comments, from those files.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import reinstall_retired, signature_names

revision: str = "0055_retire_release11"
down_revision: str | None = "0054_sweep_by_tid"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
RETIRED: tuple[str, ...] = (
    # the per-row decision: sweep_cutoff_v1 (0054_sweep_by_tid)
    "sweep_action_v1(integer,double precision,double precision,double precision)",
    # the sweep: sweep_batch_v7 (0054_sweep_by_tid)
    "sweep_batch_v6(timestamp with time zone,double precision,double precision,integer,"
    "boolean,boolean,boolean,text,text)",
)

#: The released files that create or comment on a retired version, in the order their
#: migrations first ran them (the downgrade re-runs exactly those statements).
RELEASED_FILES: tuple[str, ...] = (
    "functions/decay_v1.sql",  # 0001_foundation
    "functions/comments_v1.sql",  # its comment
    "functions/sweep_v6.sql",  # 0052_sweep_batch_log
)


def retired_names() -> set[str]:
    return signature_names(RETIRED)


def reinstall_statements() -> list[str]:
    """The CREATE and COMMENT statements that bring every retired version back."""
    return reinstall_retired(RELEASED_FILES, RETIRED)


def upgrade() -> None:
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))


def downgrade() -> None:
    run_sql(";\n".join(reinstall_statements()))
