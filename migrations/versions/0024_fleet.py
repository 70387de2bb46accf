"""Several bot processes on one database (issue 23): leases for long work.

Revision ID: 0024_fleet
Revises: 0028_sweep_pause
Create Date: 2026-12-04

lease: one row per piece of long work being done somewhere in the fleet (an L3 cycle of
a target, the session-expiry job, a sweep, a re-embed, a backup), claimed and renewed by
sql/functions/lease_v1.sql — read its header for why a row with an expiry and not a lock.
job: the admin page's background jobs (backup, sweep, re-embed) of every process, with
progress, owner process and heartbeat (sql/functions/job_v1.sql).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0024_fleet"
down_revision: str | None = "0028_sweep_pause"
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
    op.create_table(
        "job",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False, comment="backup | sweep | reembed"),
        sa.Column(
            "state",
            sa.Text(),
            nullable=False,
            comment="running | done | failed | cancelled | lost (its process died)",
        ),
        sa.Column("phase", sa.Text(), nullable=False),
        sa.Column("done", sa.BigInteger(), nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=False),
        sa.Column("started_by", sa.Text(), nullable=False, comment="the operator"),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "owner", sa.Text(), nullable=False, comment="host:pid:start of the running process"
        ),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "cancel_requested", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
        sa.Column("cancelled_by", sa.Text(), nullable=True),
        sa.Column("result", sa.Text(), nullable=True, comment="what it did, one line"),
        sa.Column("error", sa.Text(), nullable=True, comment="why it failed (redacted)"),
        sa.CheckConstraint("kind IN ('backup', 'sweep', 'reembed')", name=op.f("ck_job_kind")),
        sa.CheckConstraint(
            "state IN ('running', 'done', 'failed', 'cancelled', 'lost')",
            name=op.f("ck_job_state"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job")),
        schema=SCHEMA,
        comment="The admin page's background jobs of every process (job_start_v1)",
    )
    op.create_index(
        "ux_job_one_running_per_kind",
        "job",
        ["kind"],
        unique=True,
        schema=SCHEMA,
        postgresql_where=sa.text("state = 'running'"),
    )
    op.create_index(op.f("ix_job_started_at"), "job", ["started_at"], schema=SCHEMA)
    run_sql_file("functions/job_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/job_v1.down.sql")
    op.drop_table("job", schema=SCHEMA)
    run_sql_file("functions/lease_v1.down.sql")
    op.drop_table("lease", schema=SCHEMA)
