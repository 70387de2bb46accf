"""Foundation: pgvector, L1 memo, L2 memory, store metadata, decay functions, usage view.

Revision ID: 0001_foundation
Revises:
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import VECTOR
from sqlalchemy.dialects import postgresql

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0001_foundation"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    # The extension lives in the default schema so that other plugins can share it.
    # It is created here, never at runtime; the downgrade leaves it (others may use it).
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")

    op.create_table(
        "memory",
        sa.Column(
            "id",
            sa.Text(),
            server_default=sa.text("replace((gen_random_uuid())::text, '-'::text, ''::text)"),
            nullable=False,
            comment="32 lowercase hex characters, like the reference's uuid4().hex",
        ),
        sa.Column(
            "partition_key",
            sa.Text(),
            nullable=False,
            comment="uni_id: QQPlatform_Private_{qq} / QQPlatform_Group_{gid} / global",
        ),
        sa.Column("scope", sa.Text(), nullable=False, comment="user | group | global"),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column(
            "tags",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'::text[]"),
            nullable=False,
        ),
        sa.Column(
            "importance",
            sa.SmallInteger(),
            nullable=False,
            comment="1–10; tiers 1–3 low, 4–7 medium, 8–10 high",
        ),
        sa.Column(
            "category", sa.Text(), nullable=True, comment="preference | rule | event | knowledge"
        ),
        sa.Column(
            "source",
            sa.Text(),
            server_default=sa.text("'auto'::text"),
            nullable=False,
            comment="user | auto | system",
        ),
        sa.Column(
            "author",
            sa.Text(),
            nullable=True,
            comment="user id of whoever wrote it (group edit rights)",
        ),
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
        sa.Column(
            "tier_since",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="when the memory entered its current importance tier; the sweep's clock",
        ),
        sa.Column(
            "embedding", VECTOR(), nullable=False, comment="dimension = store_meta.embed_dim"
        ),
        sa.Column("embed_fingerprint", sa.Text(), nullable=False),
        sa.CheckConstraint("id ~ '^[0-9a-f]{32}$'", name=op.f("ck_memory_id_hex")),
        sa.CheckConstraint("scope IN ('user', 'group', 'global')", name=op.f("ck_memory_scope")),
        sa.CheckConstraint("importance BETWEEN 1 AND 10", name=op.f("ck_memory_importance")),
        sa.CheckConstraint(
            "category IS NULL OR category IN ('preference', 'rule', 'event', 'knowledge')",
            name=op.f("ck_memory_category"),
        ),
        sa.CheckConstraint("source IN ('user', 'auto', 'system')", name=op.f("ck_memory_source")),
        sa.CheckConstraint("content <> ''", name=op.f("ck_memory_content_nonempty")),
        sa.CheckConstraint("partition_key <> ''", name=op.f("ck_memory_partition_nonempty")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory")),
        schema=SCHEMA,
        comment="L2 memories: one row per long-tail fact, with its vector",
    )
    op.create_index(
        "ix_memory_partition_key_created_at_id",
        "memory",
        ["partition_key", "created_at", "id"],
        unique=False,
        schema=SCHEMA,
    )

    op.create_table(
        "memo",
        sa.Column("partition_key", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), server_default=sa.text("''::text"), nullable=False),
        sa.Column("version", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("char_length(content) <= 10000", name=op.f("ck_memo_content_ceiling")),
        sa.PrimaryKeyConstraint("partition_key", name=op.f("pk_memo")),
        schema=SCHEMA,
        comment="L1 memo: one declarative note per partition, injected into every turn",
    )

    op.create_table(
        "store_meta",
        sa.Column("id", sa.SmallInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "embed_fingerprint",
            sa.Text(),
            nullable=True,
            comment="sha256(protocol|model|base_url) of the stored vectors",
        ),
        sa.Column("embed_protocol", sa.Text(), nullable=True),
        sa.Column("embed_model", sa.Text(), nullable=True),
        sa.Column("embed_base_url", sa.Text(), nullable=True),
        sa.Column("embed_dim", sa.Integer(), nullable=True),
        sa.Column(
            "key_format_version",
            sa.Integer(),
            nullable=True,
            comment="2 = uni_id keys (reference §2.5)",
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("id = 1", name=op.f("ck_store_meta_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_store_meta")),
        schema=SCHEMA,
        comment="One row: which embedding model the vectors belong to, and the key format",
    )
    op.execute(f"INSERT INTO {SCHEMA}.store_meta (id) VALUES (1)")

    run_sql_file("functions/decay_v1.sql")
    run_sql_file("views/partition_usage_v1.sql")


def downgrade() -> None:
    run_sql_file("views/partition_usage_v1.down.sql")
    run_sql_file("functions/decay_v1.down.sql")
    op.drop_table("store_meta", schema=SCHEMA)
    op.drop_table("memo", schema=SCHEMA)
    op.drop_index("ix_memory_partition_key_created_at_id", table_name="memory", schema=SCHEMA)
    op.drop_table("memory", schema=SCHEMA)
