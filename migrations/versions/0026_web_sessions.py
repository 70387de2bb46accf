"""Admin page sessions and failed logins as rows (issue 27 item 6, issue 23 item 2).

Revision ID: 0026_web_sessions
Revises: 0023_l2_fast
Create Date: 2026-12-04

``web_session``: one row per logged-in session; the signed cookie carries its id, and a
session counts only while its row is neither revoked (logout, "log out everywhere") nor
expired, and was made with the password hash configured now (a password change ends the
sessions from before it). ``web_login_failure``: failed logins per client address, so
that every process of a fleet counts against one limit. New tables, nothing migrated:
sessions signed before this revision carry no row and are logged out once.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026_web_sessions"
down_revision: str | None = "0023_l2_fast"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "web_session",
        sa.Column("id", sa.Text(), nullable=False, comment="the random id the cookie carries"),
        sa.Column("role", sa.Text(), nullable=False, comment="admin | superuser"),
        sa.Column("name", sa.Text(), nullable=False, comment="the name given at login"),
        sa.Column(
            "password_fp",
            sa.Text(),
            nullable=False,
            comment="fingerprint of the password hash logged in with (a change ends the session)",
        ),
        sa.Column("client", sa.Text(), nullable=True, comment="the client address at login"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "revoked_at",
            sa.DateTime(timezone=True),
            nullable=True,
            comment="set by logout or log out everywhere",
        ),
        sa.CheckConstraint("role IN ('admin', 'superuser')", name=op.f("ck_web_session_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_session")),
        schema=SCHEMA,
        comment="Logged-in admin page sessions: revocable server-side",
    )
    op.create_index(
        op.f("ix_web_session_expires_at"),
        "web_session",
        ["expires_at"],
        unique=False,
        schema=SCHEMA,
    )
    op.create_table(
        "web_login_failure",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("client", sa.Text(), nullable=False, comment="the client address"),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_login_failure")),
        schema=SCHEMA,
        comment="Failed admin page logins, counted by every process for the rate limit",
    )
    op.create_index(
        op.f("ix_web_login_failure_client_at"),
        "web_login_failure",
        ["client", "at"],
        unique=False,
        schema=SCHEMA,
    )


def downgrade() -> None:
    op.drop_index(
        op.f("ix_web_login_failure_client_at"), table_name="web_login_failure", schema=SCHEMA
    )
    op.drop_table("web_login_failure", schema=SCHEMA)
    op.drop_index(op.f("ix_web_session_expires_at"), table_name="web_session", schema=SCHEMA)
    op.drop_table("web_session", schema=SCHEMA)
