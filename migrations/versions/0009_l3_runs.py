"""L3 runs: consolidation cycles, the tokens of every LLM call, pending proactive messages.

Revision ID: 0009_l3_runs
Revises: 0008_l3_state
Create Date: 2026-12-06

- ``consolidation_cycle``: one row per cycle (outcome, counters, token totals, summary);
- ``token_usage``: one row per LLM call of a cycle (step / send / summary, reference W16);
- ``pending_message``: what ``subconscious_send_to_user`` queued, delivered once (W14);
- ``sql/functions/l3_v1.sql``: ``duplicate_pairs_v1``, the near-duplicate pre-pass.

Every table leads its primary key with the target partition (Citus's distribution column).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0009_l3_runs"
down_revision: str | None = "0008_l3_state"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "consolidation_cycle",
        sa.Column(
            "target_key",
            sa.Text(),
            nullable=False,
            comment="the partition the cycle consolidated",
        ),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("trigger", sa.Text(), nullable=False, comment="manual | scheduled | cli | test"),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "ended_at", sa.DateTime(timezone=True), nullable=True, comment="NULL while running"
        ),
        sa.Column("ok", sa.Boolean(), nullable=True, comment="NULL while running"),
        sa.Column(
            "error", sa.Text(), nullable=True, comment="why it failed (one redacted sentence)"
        ),
        sa.Column("iterations", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("tool_calls", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("memories_changed", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "summary",
            sa.Text(),
            nullable=True,
            comment="the model's subconscious_iter_stop summary",
        ),
        sa.Column("dry_run", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.CheckConstraint(
            "trigger IN ('manual', 'scheduled', 'cli', 'test')",
            name=op.f("ck_consolidation_cycle_trigger"),
        ),
        sa.PrimaryKeyConstraint("target_key", "id", name=op.f("pk_consolidation_cycle")),
        schema=SCHEMA,
        comment="L3 consolidation cycles: one row per run, with its outcome and token totals",
    )
    op.create_table(
        "token_usage",
        sa.Column("target_key", sa.Text(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("cycle_id", sa.BigInteger(), nullable=False),
        sa.Column("purpose", sa.Text(), nullable=False, comment="step | send | summary"),
        sa.Column("model", sa.Text(), server_default=sa.text("''::text"), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "purpose IN ('step', 'send', 'summary')", name=op.f("ck_token_usage_purpose")
        ),
        sa.ForeignKeyConstraint(
            ["target_key", "cycle_id"],
            [f"{SCHEMA}.consolidation_cycle.target_key", f"{SCHEMA}.consolidation_cycle.id"],
            name=op.f("fk_token_usage_target_key_consolidation_cycle"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("target_key", "id", name=op.f("pk_token_usage")),
        schema=SCHEMA,
        comment="Tokens of every LLM call an L3 cycle made (ReAct steps, proactive messages, "
        "session summaries), as the endpoint reported them",
    )
    op.create_index(
        "ix_token_usage_target_key_cycle_id",
        "token_usage",
        ["target_key", "cycle_id"],
        unique=False,
        schema=SCHEMA,
    )
    op.create_table(
        "pending_message",
        sa.Column(
            "target_key",
            sa.Text(),
            nullable=False,
            comment="the personal partition it is for",
        ),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("cycle_id", sa.BigInteger(), nullable=True, comment="the cycle that wrote it"),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "delivered_at",
            sa.DateTime(timezone=True),
            nullable=True,
            comment="set once, by the delivery that took it (NULL = still pending)",
        ),
        sa.CheckConstraint("content <> ''", name=op.f("ck_pending_message_content_nonempty")),
        sa.PrimaryKeyConstraint("target_key", "id", name=op.f("pk_pending_message")),
        schema=SCHEMA,
        comment="Proactive messages of the L3 loop (subconscious_send_to_user), delivered once",
    )
    run_sql_file("functions/l3_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/l3_v1.down.sql")
    op.drop_table("pending_message", schema=SCHEMA)
    op.drop_index("ix_token_usage_target_key_cycle_id", table_name="token_usage", schema=SCHEMA)
    op.drop_table("token_usage", schema=SCHEMA)
    op.drop_table("consolidation_cycle", schema=SCHEMA)
