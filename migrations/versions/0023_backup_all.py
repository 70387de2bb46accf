"""Backups of the whole store: generic table export/import/digest functions and the
scheduled backup's claim row (issue 27, items 2 and 3).

Revision ID: 0023_backup_all
Revises: 0022_retire_sql
Create Date: 2026-12-04

backup_schedule is one row: the last slot of ``[backup] schedule`` a process of the
fleet claimed (claim_backup_slot_v1), and how that backup ended.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0023_backup_all"
down_revision: str | None = "0022_retire_sql"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "backup_schedule",
        sa.Column("id", sa.SmallInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "last_slot",
            sa.DateTime(timezone=True),
            nullable=True,
            comment="the newest slot of [backup] schedule a process claimed",
        ),
        sa.Column("claimed_by", sa.Text(), nullable=True, comment="host:pid of the claimer"),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("stem", sa.Text(), nullable=True, comment="the backup the slot produced"),
        sa.Column("ok", sa.Boolean(), nullable=True, comment="backup and verify succeeded"),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint("id = 1", name=op.f("ck_backup_schedule_one_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backup_schedule")),
        schema=SCHEMA,
        comment="One row: the last scheduled backup slot claimed (claim_backup_slot_v1)",
    )
    op.execute(f"INSERT INTO {SCHEMA}.backup_schedule (id) VALUES (1)")
    run_sql_file("functions/backup_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/backup_v1.down.sql")
    op.drop_table("backup_schedule", schema=SCHEMA)
