"""The memory's trail (issue 17, item 4): access log, change history, paused partitions.

Revision ID: 0019_trail
Revises: 0018_web_audit
Create Date: 2026-12-03

memory_access (recalls, newest N per memory, dropped with its memory by the trigger), memory_change (the
history, written by statement triggers on memory that read the writer from the
transaction setting amrita_memory.actor), paused_partition. The functions and triggers
are sql/functions/trail_v1.sql: read its header for the bounds and the actor kinds.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0019_trail"
down_revision: str | None = "0018_web_audit"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "memory_access",
        sa.Column("partition_key", sa.Text(), nullable=False),
        sa.Column("memory_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "surface",
            sa.Text(),
            nullable=False,
            comment="tool | command | cli | web | l3 | inject | relevant",
        ),
        sa.Column(
            "chat_key", sa.Text(), nullable=True, comment="the chat that recalled it (session key)"
        ),
        sa.Column(
            "who", sa.Text(), nullable=True, comment="the speaker's user id, or the operator"
        ),
        sa.Column("query", sa.Text(), nullable=True, comment="the search text, redacted and cut"),
        sa.Column(
            "score",
            postgresql.DOUBLE_PRECISION(),
            nullable=True,
            comment="the hit's decay score (NULL: injected)",
        ),
        sa.CheckConstraint(
            "surface IN ('tool', 'command', 'cli', 'web', 'l3', 'inject', 'relevant')",
            name=op.f("ck_memory_access_surface"),
        ),
        sa.PrimaryKeyConstraint("partition_key", "memory_id", "seq", name=op.f("pk_memory_access")),
        schema=SCHEMA,
        comment="Recalls of a memory (searches and injections), newest N per memory (log_access_v1)",
    )
    op.create_table(
        "memory_change",
        sa.Column("partition_key", sa.Text(), nullable=False),
        sa.Column("memory_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "actor_kind",
            sa.Text(),
            nullable=False,
            comment="person | llm | extraction | l3 | import | system",
        ),
        sa.Column(
            "actor_id", sa.Text(), nullable=True, comment="the person, chat, session or cycle"
        ),
        sa.Column(
            "op", sa.Text(), nullable=False, comment="create | update | delete | merge | tag"
        ),
        sa.Column(
            "before",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="the shown fields before (NULL: created)",
        ),
        sa.Column(
            "after",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="the shown fields after (NULL: deleted)",
        ),
        sa.Column("note", sa.Text(), nullable=True, comment="e.g. the id a merge kept"),
        sa.CheckConstraint(
            "actor_kind IN ('person', 'llm', 'extraction', 'l3', 'import', 'system')",
            name=op.f("ck_memory_change_actor_kind"),
        ),
        sa.CheckConstraint(
            "op IN ('create', 'update', 'delete', 'merge', 'tag')",
            name=op.f("ck_memory_change_op"),
        ),
        sa.PrimaryKeyConstraint("partition_key", "memory_id", "seq", name=op.f("pk_memory_change")),
        schema=SCHEMA,
        comment="Change history per memory (statement triggers on memory), newest N per memory",
    )
    op.create_index(
        "ix_memory_change_partition_key_at",
        "memory_change",
        ["partition_key", "at"],
        schema=SCHEMA,
        postgresql_where=sa.text("after IS NULL"),
    )
    op.create_table(
        "paused_partition",
        sa.Column("partition_key", sa.Text(), nullable=False),
        sa.Column("paused_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "paused_by", sa.Text(), nullable=False, comment="who paused it (person id / operator)"
        ),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "partition_key <> ''", name=op.f("ck_paused_partition_partition_nonempty")
        ),
        sa.PrimaryKeyConstraint("partition_key", name=op.f("pk_paused_partition")),
        schema=SCHEMA,
        comment="Partitions whose memory is paused: kept, not injected, not recalled, "
        "not written by automatic processes",
    )
    run_sql_file("functions/trail_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/trail_v1.down.sql")
    op.drop_table("paused_partition", schema=SCHEMA)
    op.drop_index("ix_memory_change_partition_key_at", table_name="memory_change", schema=SCHEMA)
    op.drop_table("memory_change", schema=SCHEMA)
    op.drop_table("memory_access", schema=SCHEMA)
