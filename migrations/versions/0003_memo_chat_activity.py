"""L1 memo write functions; chat log and activity heatmap (inputs of the L3 loop).

Revision ID: 0003_memo_chat_activity
Revises: 0002_l2_memory
Create Date: 2026-12-02

The memo table itself exists since 0001; this revision adds the functions that enforce
the memo cap inside the write (sql/functions/memo_v1.sql).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0003_memo_chat_activity"
down_revision: str | None = "0002_l2_memory"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "chat_log",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column(
            "session_key",
            sa.Text(),
            nullable=False,
            comment="the chat's partition: the group key in a group, else the personal key",
        ),
        sa.Column(
            "user_id",
            sa.Text(),
            nullable=False,
            comment="the speaker (the bot's own id for role bot)",
        ),
        sa.Column("group_id", sa.Text(), nullable=True),
        sa.Column("role", sa.Text(), nullable=False, comment="user | bot"),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("role IN ('user', 'bot')", name=op.f("ck_chat_log_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chat_log")),
        schema=SCHEMA,
        comment="Recent chat lines per session (bounded: chat_log_keep newest), read by L3",
    )
    op.create_index(
        "ix_chat_log_session_key_id",
        "chat_log",
        ["session_key", "id"],
        unique=False,
        schema=SCHEMA,
    )

    op.create_table(
        "activity_heatmap",
        sa.Column(
            "user_key", sa.Text(), nullable=False, comment="the user's personal partition key"
        ),
        sa.Column(
            "weekday", sa.SmallInteger(), nullable=False, comment="local weekday, 0 = Monday"
        ),
        sa.Column(
            "slot", sa.SmallInteger(), nullable=False, comment="local 2-hour slot, 0 = 00:00-02:00"
        ),
        sa.Column("hits", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "last_seen_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("weekday BETWEEN 0 AND 6", name=op.f("ck_activity_heatmap_weekday")),
        sa.CheckConstraint("slot BETWEEN 0 AND 11", name=op.f("ck_activity_heatmap_slot")),
        sa.CheckConstraint("hits >= 0", name=op.f("ck_activity_heatmap_hits")),
        sa.PrimaryKeyConstraint("user_key", "weekday", "slot", name=op.f("pk_activity_heatmap")),
        schema=SCHEMA,
        comment="Messages per user in a 7 x 12 (weekday x 2-hour slot) grid, in idle_timezone",
    )

    run_sql_file("functions/memo_v1.sql")
    run_sql_file("functions/chat_activity_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/chat_activity_v1.down.sql")
    run_sql_file("functions/memo_v1.down.sql")
    op.drop_table("activity_heatmap", schema=SCHEMA)
    op.drop_index("ix_chat_log_session_key_id", table_name="chat_log", schema=SCHEMA)
    op.drop_table("chat_log", schema=SCHEMA)
