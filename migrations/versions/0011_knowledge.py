"""Knowledge base in use: limits on the table, the suggestion queue, permission grants.

Revision ID: 0011_knowledge
Revises: 0010_profiles
Create Date: 2026-12-03

The ``knowledge`` table of 0004 gets its limits (kid format, title/summary/body
ceilings; the configured ``knowledge_max_chars`` is checked by the write functions),
and the functions of ``sql/functions/knowledge_v1.sql``. The body stays ONE text
column: its lines are derived (split on ``\\n``) by the functions that read and edit a
line range, so ``char_count`` is exact, an entry is one row, and the Markdown export is
the column as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0011_knowledge"
down_revision: str | None = "0010_profiles"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"
NOW = sa.text("now()")


def upgrade() -> None:
    op.alter_column(
        "knowledge",
        "embedding",
        schema=SCHEMA,
        comment="vector of the summary (what a knowledge search matches, as in the reference)",
        existing_nullable=False,
    )
    op.alter_column(
        "knowledge",
        "body",
        schema=SCHEMA,
        comment="the body as one text; its lines (split on \\n, '' = no lines) are derived",
        existing_nullable=False,
        existing_server_default=sa.text("''::text"),
    )
    op.create_check_constraint(
        op.f("ck_knowledge_kid_format"), "knowledge", "kid ~ '^[0-9a-f]{8,32}$'", schema=SCHEMA
    )
    op.create_check_constraint(
        op.f("ck_knowledge_title_length"),
        "knowledge",
        "char_length(title) BETWEEN 1 AND 200 AND strpos(title, E'\\n') = 0",
        schema=SCHEMA,
    )
    op.create_check_constraint(
        op.f("ck_knowledge_summary_length"),
        "knowledge",
        "char_length(summary) <= 1000",
        schema=SCHEMA,
    )
    op.create_check_constraint(
        op.f("ck_knowledge_body_ceiling"), "knowledge", "char_length(body) <= 100000", schema=SCHEMA
    )
    op.create_table(
        "knowledge_suggestion",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("action", sa.Text(), nullable=False, comment="create | update"),
        sa.Column("kid", sa.Text(), nullable=True, comment="the entry to update (update only)"),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), server_default=sa.text("''::text"), nullable=False),
        sa.Column("author_id", sa.Text(), nullable=False, comment="user id of the suggester"),
        sa.Column(
            "status",
            sa.Text(),
            server_default=sa.text("'pending'::text"),
            nullable=False,
            comment="pending | claimed (by a running cycle) | done",
        ),
        sa.Column("claimed_by_cycle", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("handled_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "action IN ('create', 'update')", name=op.f("ck_knowledge_suggestion_action")
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'claimed', 'done')", name=op.f("ck_knowledge_suggestion_status")
        ),
        sa.CheckConstraint(
            "(status = 'claimed') = (claimed_by_cycle IS NOT NULL)",
            name=op.f("ck_knowledge_suggestion_claim"),
        ),
        sa.CheckConstraint(
            "char_length(title) <= 200 AND char_length(summary) <= 1000 "
            "AND char_length(body) <= 100000 AND char_length(reason) <= 1000",
            name=op.f("ck_knowledge_suggestion_sizes"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_suggestion")),
        schema=SCHEMA,
        comment="Knowledge suggestions from the chat, bounded, claimed by an L3 cycle, "
        "marked done only when that cycle succeeds",
    )
    op.create_index(
        op.f("ix_knowledge_suggestion_status_id"),
        "knowledge_suggestion",
        ["status", "id"],
        schema=SCHEMA,
    )
    op.create_index(
        op.f("ix_knowledge_suggestion_author_id_created_at"),
        "knowledge_suggestion",
        ["author_id", "created_at"],
        schema=SCHEMA,
    )
    op.create_table(
        "permission_grant",
        sa.Column("user_id", sa.Text(), nullable=False, comment="the user's id (QQ number)"),
        sa.Column("node", sa.Text(), nullable=False, comment="memory.knowledge"),
        sa.Column("granted_by", sa.Text(), nullable=False, comment="cli, or the granting user"),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.CheckConstraint("node IN ('memory.knowledge')", name=op.f("ck_permission_grant_node")),
        sa.CheckConstraint("user_id <> ''", name=op.f("ck_permission_grant_user_nonempty")),
        sa.PrimaryKeyConstraint("user_id", "node", name=op.f("pk_permission_grant")),
        schema=SCHEMA,
        comment="Permission nodes granted to users from the CLI or /memory (LitePerm's, when absent)",
    )
    run_sql_file("functions/knowledge_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/knowledge_v1.down.sql")
    op.drop_table("permission_grant", schema=SCHEMA)
    op.drop_index(
        op.f("ix_knowledge_suggestion_author_id_created_at"),
        table_name="knowledge_suggestion",
        schema=SCHEMA,
    )
    op.drop_index(
        op.f("ix_knowledge_suggestion_status_id"), table_name="knowledge_suggestion", schema=SCHEMA
    )
    op.drop_table("knowledge_suggestion", schema=SCHEMA)
    for name in ("body_ceiling", "summary_length", "title_length", "kid_format"):
        op.drop_constraint(op.f(f"ck_knowledge_{name}"), "knowledge", schema=SCHEMA, type_="check")
    op.alter_column(
        "knowledge",
        "body",
        schema=SCHEMA,
        comment=None,
        existing_comment="the body as one text; its lines (split on \\n, '' = no lines) are derived",
        existing_nullable=False,
        existing_server_default=sa.text("''::text"),
    )
    op.alter_column(
        "knowledge",
        "embedding",
        schema=SCHEMA,
        comment="vector of title + summary",
        existing_nullable=False,
    )
