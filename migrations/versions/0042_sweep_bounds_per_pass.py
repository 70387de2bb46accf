"""The sweep keeps the history bounds once per run: sweep_batch_v5 and trim_history_v1.

Revision ID: 0042_sweep_bounds_per_pass
Revises: 0041_retire_release6
Create Date: 2026-12-04

sweep_batch_v4 probed memory_change's key once per changed memory in every batch (is
there a change past the bound?) and range-scanned the delete rows of every partition a
batch purged from, for a bound a sweep run can pass by one row per memory. v5 is v4
without that; trim_history_v1 keeps both bounds over the whole table, and the sweep runs
it once per run with the configured [trail] bounds. Read the header of
sql/functions/sweep_v5.sql. sweep_batch_v4 stays (the previous release calls it).
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0042_sweep_bounds_per_pass"
down_revision: str | None = "0041_retire_release6"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/sweep_v5.sql")


def downgrade() -> None:
    run_sql_file("functions/sweep_v5.down.sql")
