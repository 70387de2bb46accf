"""A pause means paused on every write path: automatic writes to a paused partition's memo
and profile are refused by the database (SQLSTATE AMZ01), as its memories already are.

Revision ID: 0027_pause_all
Revises: 0024_fleet
Create Date: 2026-12-04

Additive: triggers and their function only (sql/functions/pause_v1.sql); older code keeps
working on an upgraded schema (its automatic memo/profile writes to a paused partition are
refused, which is the point).
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0027_pause_all"
down_revision: str | None = "0024_fleet"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/pause_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/pause_v1.down.sql")
