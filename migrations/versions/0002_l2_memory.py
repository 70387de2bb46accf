"""L2 memory operations: insert under the cap, decay-scored search, batched sweep.

Revision ID: 0002_l2_memory
Revises: 0001_foundation
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0002_l2_memory"
down_revision: str | None = "0001_foundation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_table(
        "sweep_state",
        sa.Column("id", sa.SmallInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "cursor_id",
            sa.Text(),
            server_default=sa.text("''::text"),
            nullable=False,
            comment="last memory id swept; '' = start",
        ),
        sa.Column(
            "passes",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="completed full passes",
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("id = 1", name=op.f("ck_sweep_state_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sweep_state")),
        schema=SCHEMA,
        comment="The sweep's persisted keyset cursor, so every row is visited over successive runs",
    )
    op.execute(f"INSERT INTO {SCHEMA}.sweep_state (id) VALUES (1)")
    op.create_table(
        "ann_index",
        sa.Column("partition_key", sa.Text(), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("index_name", sa.Text(), nullable=False),
        sa.Column("rows_at_build", sa.Integer(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("partition_key", "dim", name=op.f("pk_ann_index")),
        sa.UniqueConstraint("index_name", name=op.f("uq_ann_index_index_name")),
        schema=SCHEMA,
        comment="Large partitions with their own partial HNSW index (built by maintenance, not migrations)",
    )
    # Room on each page for HOT updates: the sweep's demotions change only unindexed
    # columns (importance, tier_since), so they need not touch any index, HNSW included.
    op.execute(f"ALTER TABLE {SCHEMA}.memory SET (fillfactor = 90)")
    run_sql_file("functions/memory_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/memory_v1.down.sql")
    # Runtime-built partial HNSW indexes are recorded in ann_index; drop them with it.
    op.execute(
        f"""
        DO $$
        DECLARE r record;
        BEGIN
            FOR r IN SELECT index_name FROM {SCHEMA}.ann_index LOOP
                EXECUTE format('DROP INDEX IF EXISTS {SCHEMA}.%I', r.index_name);
            END LOOP;
        END $$;
        """
    )
    op.execute(f"ALTER TABLE {SCHEMA}.memory RESET (fillfactor)")
    op.drop_table("ann_index", schema=SCHEMA)
    op.drop_table("sweep_state", schema=SCHEMA)
