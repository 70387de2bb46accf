"""L3 scheduler state per target: penalty, run counters, next planned run, heatmap layers.

Revision ID: 0008_l3_state
Revises: 0007_idempotent_write
Create Date: 2026-12-03

One row per target partition (``[subconscious] target_user_id`` / ``targets``), written
by services/scheduling.py, so the penalty, the planner's heatmap and the next planned
run survive a restart (reference W17).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008_l3_state"
down_revision: str | None = "0007_idempotent_write"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "l3_state",
        sa.Column("target_key", sa.Text(), nullable=False, comment="the target's partition key"),
        sa.Column(
            "penalty",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="target messages since the last successful cycle",
        ),
        sa.Column(
            "penalty_at_start",
            sa.Integer(),
            nullable=True,
            comment="the penalty when the running cycle started; success subtracts it",
        ),
        sa.Column("runs", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("failures", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "failures_in_row",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="failed cycles since the last success (the retry back-off)",
        ),
        sa.Column("running_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_run_end", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_success_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_failure_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_summary", sa.Text(), nullable=True),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "plan",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="the planned window (domain.planner.Plan)",
        ),
        sa.Column(
            "heat",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="the planner's decayed heatmap layers (domain.planner.HeatState)",
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("penalty >= 0", name=op.f("ck_l3_state_penalty")),
        sa.PrimaryKeyConstraint("target_key", name=op.f("pk_l3_state")),
        schema=SCHEMA,
        comment="L3 scheduler state per target: penalty, run counters, next planned run",
    )


def downgrade() -> None:
    op.drop_table("l3_state", schema=SCHEMA)
