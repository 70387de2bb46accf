"""Several bot processes on one database (issue 23): leases for long work.

Revision ID: 0024_fleet
Revises: 0020_block_pause
Create Date: 2026-12-04

lease: one row per piece of long work being done somewhere in the fleet (an L3 cycle of
a target, the session-expiry job, a sweep, a re-embed, a backup), claimed and renewed by
sql/functions/lease_v1.sql — read its header for why a row with an expiry and not a lock.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0024_fleet"
down_revision: str | None = "0020_block_pause"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "lease",
        sa.Column(
            "kind",
            sa.Text(),
            nullable=False,
            comment="l3 | extraction | sweep | reembed | backup",
        ),
        sa.Column(
            "lease_key",
            sa.Text(),
            nullable=False,
            comment="the target / session key, '' for the fleet's one job of the kind",
        ),
        sa.Column("owner", sa.Text(), nullable=False, comment="host:pid:start of the holder"),
        sa.Column("token", sa.Text(), nullable=False, comment="random per claim"),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("renewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "expires_at",
            sa.DateTime(timezone=True),
            nullable=False,
            comment="free for anyone after this (the heartbeat pushes it)",
        ),
        sa.Column(
            "previous_owner",
            sa.Text(),
            nullable=True,
            comment="whose expired lease this claim took over",
        ),
        sa.CheckConstraint(
            "kind IN ('l3', 'extraction', 'sweep', 'reembed', 'backup')",
            name=op.f("ck_lease_kind"),
        ),
        sa.CheckConstraint("expires_at > acquired_at", name=op.f("ck_lease_expiry_after_claim")),
        sa.PrimaryKeyConstraint("kind", "lease_key", name=op.f("pk_lease")),
        schema=SCHEMA,
        comment="Who in the fleet runs which long work (lease_acquire_v1); expired = free",
    )
    run_sql_file("functions/lease_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/lease_v1.down.sql")
    op.drop_table("lease", schema=SCHEMA)
