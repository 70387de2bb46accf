"""The second seed's memory model (issue 14): manual entries protected in SQL, extraction
runs (token usage, what each covered), scopes loaded into a chat.

Revision ID: 0012_seed_model
Revises: 0011_knowledge
Create Date: 2026-12-03

update_memory_v2 / delete_memory_v1 add the source=user guard (SQLSTATE AMP01);
update_memory_v1 stays (v2 calls it).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0012_seed_model"
down_revision: str | None = "0011_knowledge"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "extraction_run",
        sa.Column(
            "session_key",
            sa.Text(),
            nullable=False,
            comment="the chat whose log was read (chat_log.session_key)",
        ),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column(
            "partition_key",
            sa.Text(),
            nullable=False,
            comment="the partition whose source=auto memories were replaced",
        ),
        sa.Column("trigger", sa.Text(), nullable=False, comment="expiry | command | cli"),
        sa.Column("status", sa.Text(), nullable=False, comment="ok | rejected | failed"),
        sa.Column("reason", sa.Text(), nullable=True, comment="why rejected or failed"),
        sa.Column("entries", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "chat_until_id",
            sa.BigInteger(),
            nullable=True,
            comment="the newest chat_log id the run read; the next run starts after it",
        ),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("total_tokens", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('ok', 'rejected', 'failed')", name=op.f("ck_extraction_run_status")
        ),
        sa.CheckConstraint(
            "trigger IN ('expiry', 'command', 'cli')", name=op.f("ck_extraction_run_trigger")
        ),
        sa.PrimaryKeyConstraint("session_key", "id", name=op.f("pk_extraction_run")),
        schema=SCHEMA,
        comment="Automatic extraction runs: outcome, token usage, and how far each read the chat log",
    )
    op.create_table(
        "loaded_scope",
        sa.Column(
            "chat_key",
            sa.Text(),
            nullable=False,
            comment="the chat that loaded it (ToolContext.session_key)",
        ),
        sa.Column("scope_key", sa.Text(), nullable=False, comment="the loaded partition"),
        sa.Column("loaded_by", sa.Text(), nullable=False, comment="user id of the speaker"),
        sa.Column(
            "loaded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("chat_key <> scope_key", name=op.f("ck_loaded_scope_not_self")),
        sa.PrimaryKeyConstraint("chat_key", "scope_key", name=op.f("pk_loaded_scope")),
        schema=SCHEMA,
        comment="Scopes loaded read-only into a chat (memory_load_context) until unloaded or the session expires",
    )
    run_sql_file("functions/protect_manual_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/protect_manual_v1.down.sql")
    op.drop_table("loaded_scope", schema=SCHEMA)
    op.drop_table("extraction_run", schema=SCHEMA)
