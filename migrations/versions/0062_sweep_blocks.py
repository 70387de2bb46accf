"""sweep_batch_v9: the decay sweep walks the heap by block ranges, its cursor a tid

Revision ID: 0062_sweep_blocks
Revises: 0061_partition_count

The walk follows the heap's physical order, block range by block range (TID Range Scans),
its cursor a tid (sweep_state.cursor_tid); a row written since the run or the pass over the
table began (sweep_state.lap_since) is left to the next pass, so a demotion an update moved
to a later page is not met twice. Why: by the primary key a batch read a random page per row once the table outgrew
shared_buffers (the sweep of a million memories took 38x the 100k one); a block range
reads each page once, in order.

0062_sweep_blocks.sql brings the functions, views and triggers of the previous head to the
live files' (sql/functions); 0062_sweep_blocks.down.sql brings them back. Both are frozen
with this migration (written by tests/support/sql_migration.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0062_sweep_blocks"
down_revision: str | None = "0061_partition_count"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HERE = Path(__file__)


def upgrade() -> None:
    # table changes (op.*) go first: the definitions below may use them
    op.add_column(
        "sweep_state",
        sa.Column(
            "cursor_tid",
            sa.Text(),
            server_default=sa.text("'(0,0)'::text"),
            nullable=False,
            comment="the tid of the last memory swept (sweep_batch_v9, the heap's order); "
            "'(0,0)' = start",
        ),
        schema="amrita_memory",
    )
    op.add_column(
        "sweep_state",
        sa.Column(
            "lap_since",
            sa.BigInteger(),
            nullable=True,
            comment="the xid (xid8) the current pass over the table began at: rows written "
            "since are left to the next (sweep_batch_v9)",
        ),
        schema="amrita_memory",
    )
    run_sql_file(HERE.with_suffix(".sql"))


def downgrade() -> None:
    run_sql_file(HERE.with_suffix(".down.sql"))
    # then the table changes undone (op.*)
    op.drop_column("sweep_state", "lap_since", schema="amrita_memory")
    op.drop_column("sweep_state", "cursor_tid", schema="amrita_memory")
