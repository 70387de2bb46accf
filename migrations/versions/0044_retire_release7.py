"""Retire SQL of release 7: drop the versions nothing calls now that the previous release
is d58e458 (sql/PREVIOUS_RELEASE.txt regenerated from it).

Revision ID: 0044_retire_release7
Revises: 0043_trail_row_triggers
Create Date: 2026-12-04

Dropped: sweep_batch_v4. 0042_sweep_bounds_per_pass kept it because the release before
(e0bf65d) still called it; d58e458 calls sweep_batch_v5 and trim_history_v1 instead.
Read from a migrated database with tests/support/sql_usage.py;
tests/migration/test_orphan_sql.py fails if this drops anything live or leaves an orphan.

Its file stays in sql/functions (released files are immutable, older migrations run it);
the downgrade re-installs it, with its comment, from that file.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import reinstall_retired, signature_names

revision: str = "0044_retire_release7"
down_revision: str | None = "0043_trail_row_triggers"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
RETIRED: tuple[str, ...] = (
    # the sweep: sweep_batch_v5 + trim_history_v1 (0042_sweep_bounds_per_pass)
    "sweep_batch_v4(timestamp with time zone,double precision,double precision,integer,boolean,boolean,boolean,text,text)",
)

#: The released files that create or comment on a retired version, in the order their
#: migrations first ran them (the downgrade re-runs exactly those statements).
RELEASED_FILES: tuple[str, ...] = ("functions/sweep_v4.sql",)  # 0030_write_fast


def retired_names() -> set[str]:
    return signature_names(RETIRED)


def reinstall_statements() -> list[str]:
    """The CREATE and COMMENT statements that bring every retired version back."""
    return reinstall_retired(RELEASED_FILES, RETIRED)


def upgrade() -> None:
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))


def downgrade() -> None:
    run_sql(";\n".join(reinstall_statements()))
