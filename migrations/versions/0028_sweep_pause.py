"""The sweep skips paused partitions (issue 27 item 4): sweep_batch_v3.

Revision ID: 0028_sweep_pause
Revises: 0026_web_sessions
Create Date: 2026-12-04

A pause "keeps its memories": sweep_batch_v3 keeps every row of a paused partition (no
demotion, no purge), also under `amrita-memory sweep --force`. sweep_batch_v2 stays
(additive): older code keeps working on an upgraded schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0028_sweep_pause"
down_revision: str | None = "0026_web_sessions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/sweep_v3.sql")


def downgrade() -> None:
    run_sql_file("functions/sweep_v3.down.sql")
