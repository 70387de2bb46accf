"""The decay sweep spares manual entries (issue 14, item 2): sweep_batch_v2.

Revision ID: 0014_sweep_protect
Revises: 0013_import
Create Date: 2026-12-03

sweep_batch_v2 = sweep_batch_v1 plus p_protect_user (source=user rows are kept);
sweep_batch_v1 stays (released, immutable).
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0014_sweep_protect"
down_revision: str | None = "0013_import"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/sweep_v2.sql")


def downgrade() -> None:
    run_sql_file("functions/sweep_v2.down.sql")
