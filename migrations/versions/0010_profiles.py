"""User profiles: a summary plus numbered lines per personal partition, and their history.

Revision ID: 0010_profiles
Revises: 0009_l3_runs
Create Date: 2026-12-03

- ``profile``: one row per user (personal partition key): ``summary`` and ``lines``
  (the body, one array element per line: the numbering read and update share, so the
  reference's off-by-one, §15 B2, cannot happen), ``version`` (+1 per write).
- ``profile_history``: one row per change (who: cli / chat / loop with its cycle id;
  the content before and after; when), the newest ``[profile] history_keep`` per
  profile, so a bad rewrite can be reverted.
- ``sql/functions/profile_v1.sql``: ``profile_save_v1``, the one write: compare-and-set
  on the version, history row and trim in the same transaction.

Both tables lead their primary key with the partition key (Citus distribution column).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0010_profiles"
down_revision: str | None = "0009_l3_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "profile",
        sa.Column(
            "partition_key", sa.Text(), nullable=False, comment="the user's personal partition key"
        ),
        sa.Column("summary", sa.Text(), server_default=sa.text("''::text"), nullable=False),
        sa.Column(
            "lines",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'::text[]"),
            nullable=False,
            comment="the body, one element per line; element i is line i (0-based) everywhere",
        ),
        sa.Column(
            "version",
            sa.Integer(),
            server_default=sa.text("1"),
            nullable=False,
            comment="+1 per write; the compare-and-set of profile_save_v1",
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("partition_key <> ''", name=op.f("ck_profile_partition_nonempty")),
        sa.CheckConstraint(
            "char_length(summary) <= 10000", name=op.f("ck_profile_summary_ceiling")
        ),
        sa.CheckConstraint("cardinality(lines) <= 5000", name=op.f("ck_profile_lines_ceiling")),
        sa.PrimaryKeyConstraint("partition_key", name=op.f("pk_profile")),
        schema=SCHEMA,
        comment="User profiles: a summary plus numbered body lines per personal partition",
    )
    op.create_table(
        "profile_history",
        sa.Column("partition_key", sa.Text(), nullable=False),
        sa.Column(
            "version", sa.Integer(), nullable=False, comment="the profile's version after it"
        ),
        sa.Column(
            "operation",
            sa.Text(),
            nullable=False,
            comment="what changed, e.g. append 2 lines / replace [0:1] -> [0:2] / revert to v3",
        ),
        sa.Column("actor_kind", sa.Text(), nullable=False, comment="cli | chat | loop"),
        sa.Column(
            "actor",
            sa.Text(),
            nullable=True,
            comment="the operator (cli) or user id (chat) who made it",
        ),
        sa.Column(
            "cycle_id", sa.BigInteger(), nullable=True, comment="the L3 cycle (actor_kind loop)"
        ),
        sa.Column("old_summary", sa.Text(), nullable=False),
        sa.Column("old_lines", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("new_summary", sa.Text(), nullable=False),
        sa.Column("new_lines", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column(
            "changed_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "actor_kind IN ('cli', 'chat', 'loop')", name=op.f("ck_profile_history_actor_kind")
        ),
        sa.CheckConstraint(
            "actor_kind <> 'loop' OR cycle_id IS NOT NULL",
            name=op.f("ck_profile_history_loop_cycle"),
        ),
        sa.PrimaryKeyConstraint("partition_key", "version", name=op.f("pk_profile_history")),
        schema=SCHEMA,
        comment="Profile changes, newest [profile] history_keep per profile, for revert",
    )
    run_sql_file("functions/profile_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/profile_v1.down.sql")
    op.drop_table("profile_history", schema=SCHEMA)
    op.drop_table("profile", schema=SCHEMA)
