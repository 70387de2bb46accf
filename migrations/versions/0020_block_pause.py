"""The per-turn block leaves paused partitions out in its one round trip: memory_block_v2.

Revision ID: 0020_block_pause
Revises: 0019_trail
Create Date: 2026-12-03

memory_block_v1 stays (additive): older code keeps working on an upgraded schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0020_block_pause"
down_revision: str | None = "0019_trail"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/injection_v2.sql")


def downgrade() -> None:
    run_sql_file("functions/injection_v2.down.sql")
