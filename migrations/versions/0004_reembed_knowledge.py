"""Online re-embedding (staging beside the live vectors) and the knowledge-base table.

Revision ID: 0004_reembed_knowledge
Revises: 0003_memo_chat_activity
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import VECTOR

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0004_reembed_knowledge"
down_revision: str | None = "0003_memo_chat_activity"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "knowledge",
        sa.Column("kid", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), server_default=sa.text("''::text"), nullable=False),
        sa.Column("body", sa.Text(), server_default=sa.text("''::text"), nullable=False),
        sa.Column("embedding", VECTOR(), nullable=False, comment="vector of title + summary"),
        sa.Column("embed_fingerprint", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("kid <> ''", name=op.f("ck_knowledge_kid_nonempty")),
        sa.PrimaryKeyConstraint("kid", name=op.f("pk_knowledge")),
        schema=SCHEMA,
        comment="Global knowledge base (L3); its vectors are re-embedded and backed up with the memories",
    )
    op.create_table(
        "reembed_job",
        sa.Column("id", sa.SmallInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column("target_fingerprint", sa.Text(), nullable=False),
        sa.Column("protocol", sa.Text(), nullable=True),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("base_url", sa.Text(), nullable=True),
        sa.Column(
            "started_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("id = 1", name=op.f("ck_reembed_job_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reembed_job")),
        schema=SCHEMA,
        comment="The re-embed in progress, if any: new vectors are staged beside the old ones",
    )
    op.create_table(
        "reembed_staging",
        sa.Column("kind", sa.Text(), nullable=False, comment="memory | knowledge"),
        sa.Column("row_id", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("embedding", VECTOR(), nullable=False),
        sa.Column(
            "source_updated_at",
            sa.DateTime(timezone=True),
            nullable=False,
            comment="updated_at of the row when its text was embedded; a later edit invalidates it",
        ),
        sa.CheckConstraint("kind IN ('memory', 'knowledge')", name=op.f("ck_reembed_staging_kind")),
        sa.PrimaryKeyConstraint("kind", "row_id", name=op.f("pk_reembed_staging")),
        schema=SCHEMA,
        comment="New vectors of an online re-embed, written in batches, switched in one transaction",
    )
    run_sql_file("functions/reembed_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/reembed_v1.down.sql")
    op.drop_table("reembed_staging", schema=SCHEMA)
    op.drop_table("reembed_job", schema=SCHEMA)
    op.drop_table("knowledge", schema=SCHEMA)
