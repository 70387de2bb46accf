"""The admin web page's audit log (issue 17): every write made through the page.

Revision ID: 0018_web_audit
Revises: 0016_injection
Create Date: 2026-12-03

One table, append-only from the application's side (amrita_memory_pg/storage/admin_audit.py).
Its rows belong to no partition (a clear or a global page is not one partition's), so the
key is the identity alone; ``partition_key`` is a column to filter by.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018_web_audit"
down_revision: str | None = "0016_injection"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "admin_audit",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column(
            "at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("actor", sa.Text(), nullable=False, comment="the name given at login"),
        sa.Column("role", sa.Text(), nullable=False, comment="admin | superuser"),
        sa.Column(
            "client", sa.Text(), nullable=True, comment="the client address the request came from"
        ),
        sa.Column(
            "action", sa.Text(), nullable=False, comment="what was done, e.g. memory.add, memo.edit"
        ),
        sa.Column("partition_key", sa.Text(), nullable=True, comment="the partition written to"),
        sa.Column("target_id", sa.Text(), nullable=True, comment="the memory id / kid / job id"),
        sa.Column(
            "detail",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="the write's arguments and outcome (secrets redacted)",
        ),
        sa.Column(
            "ok", sa.Boolean(), nullable=False, comment="false = refused or failed, nothing written"
        ),
        sa.CheckConstraint("role IN ('admin', 'superuser')", name=op.f("ck_admin_audit_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admin_audit")),
        schema=SCHEMA,
        comment="Writes made through the admin web page: who, what, when, and whether it took",
    )
    op.create_index(op.f("ix_admin_audit_at"), "admin_audit", ["at"], unique=False, schema=SCHEMA)
    op.create_index(
        op.f("ix_admin_audit_partition_key_at"),
        "admin_audit",
        ["partition_key", "at"],
        unique=False,
        schema=SCHEMA,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_admin_audit_partition_key_at"), table_name="admin_audit", schema=SCHEMA)
    op.drop_index(op.f("ix_admin_audit_at"), table_name="admin_audit", schema=SCHEMA)
    op.drop_table("admin_audit", schema=SCHEMA)
