"""Retire SQL of release 10: drop the versions nothing calls now that the previous release
is 040ab8c (sql/PREVIOUS_RELEASE.txt regenerated from it).

Revision ID: 0053_retire_release10
Revises: 0052_sweep_batch_log
Create Date: 2026-12-05

Dropped: sweep_batch_v5. 0052_sweep_batch_log kept it because the release before (7a5abd4)
still called it; 040ab8c calls sweep_batch_v6 (sweep_v6.sql) instead. trim_history_v1 stays:
trim_history_v2 calls it for a whole walk (never run, a smaller bound, a restored sequence).
Read from a migrated database with tests/support/sql_usage.py;
tests/migration/test_orphan_sql.py fails if this drops anything live or leaves an orphan.

Its file stays in sql/functions (released files are immutable, older migrations run it);
the downgrade re-installs it, with its comment, from that file.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import reinstall_retired, signature_names

revision: str = "0053_retire_release10"
down_revision: str | None = "0052_sweep_batch_log"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
RETIRED: tuple[str, ...] = (
    # the sweep: sweep_batch_v6 (0052_sweep_batch_log)
    "sweep_batch_v5(timestamp with time zone,double precision,double precision,integer,"
    "boolean,boolean,boolean,text,text)",
)

#: The released files that create or comment on a retired version, in the order their
#: migrations first ran them (the downgrade re-runs exactly those statements).
RELEASED_FILES: tuple[str, ...] = ("functions/sweep_v5.sql",)  # 0042_sweep_bounds_per_pass


def retired_names() -> set[str]:
    return signature_names(RETIRED)


def reinstall_statements() -> list[str]:
    """The CREATE and COMMENT statements that bring every retired version back."""
    return reinstall_retired(RELEASED_FILES, RETIRED)


def upgrade() -> None:
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))


def downgrade() -> None:
    run_sql(";\n".join(reinstall_statements()))
