"""The sweep records its changes as one row per batch: sweep_change, sweep_batch_v6.

Revision ID: 0052_sweep_batch_log
Revises: 0051_retire_release9
Create Date: 2026-12-04

sweep_batch_v5 wrote one memory_change row per memory it demoted or purged: 1.33-1.53x
the release-2 sweep (which recorded nothing), the rows being the whole gap. v6 writes one
sweep_change row per batch (element i of its arrays is one memory as it was; stored
uncompressed, the compression would cost the sweep what the rows did); memory_history_v1
reads a memory's history from both tables (the GIN index on memory_ids finds its batch
rows), and trim_history_v2 expires batch rows after the [trail] days and walks only the
memories with history newer than its last run (sweep_state.trimmed_seq / trimmed_keep,
new columns). Read the header of
sql/functions/sweep_v6.sql. sweep_batch_v5 / trim_history_v1 stay (the previous release
calls them).

Downgrade: every batch row becomes the memory_change rows v5 would have written (same
seq, at, actor, op, fields), so no history is lost; then the table and v6 go.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from amrita_memory_pg.storage.pg.migrate import run_sql, run_sql_file

revision: str = "0052_sweep_batch_log"
down_revision: str | None = "0051_retire_release9"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"
ARRAYS = (
    "partition_keys",
    "memory_ids",
    "ops",
    "contents",
    "tags",
    "importances",
    "categories",
    "scopes",
    "sources",
    "new_importances",
    "new_sources",
)

#: the batch rows as the memory_change rows v5 wrote (the view memory_history_v1 reads)
EXPAND = f"""
INSERT INTO {SCHEMA}.memory_change
       (partition_key, memory_id, seq, at, actor_kind, actor_id, op, before, after, note)
SELECT partition_key, memory_id, seq, at, actor_kind, actor_id, op, before, after, note
  FROM {SCHEMA}.sweep_change_entry
"""


def upgrade() -> None:
    text_array = postgresql.ARRAY(sa.Text())
    small_array = postgresql.ARRAY(sa.SmallInteger())
    op.create_table(
        "sweep_change",
        sa.Column("seq", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "actor_kind",
            sa.Text(),
            nullable=False,
            comment="system | person | ... as memory_change",
        ),
        sa.Column("actor_id", sa.Text(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("partition_keys", text_array, nullable=False),
        sa.Column("memory_ids", text_array, nullable=False),
        sa.Column("ops", text_array, nullable=False, comment="update | tag | delete | merge each"),
        sa.Column("contents", text_array, nullable=False),
        sa.Column("tags", text_array, nullable=False, comment="each the text of a memory's text[]"),
        sa.Column("importances", small_array, nullable=False),
        sa.Column("categories", text_array, nullable=False),
        sa.Column("scopes", text_array, nullable=False),
        sa.Column("sources", text_array, nullable=False),
        sa.Column(
            "new_importances",
            small_array,
            nullable=False,
            comment="each the importance after (NULL: purged)",
        ),
        sa.Column(
            "new_sources",
            text_array,
            nullable=False,
            comment="each the source after (NULL: purged)",
        ),
        sa.CheckConstraint(
            "actor_kind IN ('person', 'llm', 'extraction', 'l3', 'import', 'system')",
            name=op.f("ck_sweep_change_actor_kind"),
        ),
        sa.CheckConstraint(
            "ops <@ ARRAY['update', 'delete', 'merge', 'tag']", name=op.f("ck_sweep_change_ops")
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_sweep_change")),
        schema=SCHEMA,
        comment="The sweep's change history: one row per batch, one array element per memory",
    )
    op.create_index(
        "ix_sweep_change_memory_ids",
        "sweep_change",
        ["memory_ids"],
        schema=SCHEMA,
        postgresql_using="gin",
    )
    # uncompressed: a batch row is written once and read per memory
    op.execute(
        f"ALTER TABLE {SCHEMA}.sweep_change "
        + ", ".join(f"ALTER COLUMN {c} SET STORAGE EXTERNAL" for c in ARRAYS)
    )
    # trim_history_v2's watermark: the memories with history past it are the ones it walks
    op.add_column(
        "sweep_state",
        sa.Column(
            "trimmed_seq",
            sa.BigInteger(),
            nullable=False,
            server_default=sa.text("0"),
            comment="the history's last seq when trim_history_v2 last ran (it walks past it)",
        ),
        schema=SCHEMA,
    )
    op.add_column(
        "sweep_state",
        sa.Column(
            "trimmed_keep",
            sa.Integer(),
            nullable=True,
            comment="the changes per memory it kept then (NULL: never ran)",
        ),
        schema=SCHEMA,
    )
    run_sql_file("functions/sweep_v6.sql")


def downgrade() -> None:
    run_sql(EXPAND)
    run_sql_file("functions/sweep_v6.down.sql")
    op.drop_column("sweep_state", "trimmed_keep", schema=SCHEMA)
    op.drop_column("sweep_state", "trimmed_seq", schema=SCHEMA)
    op.drop_index("ix_sweep_change_memory_ids", table_name="sweep_change", schema=SCHEMA)
    op.drop_table("sweep_change", schema=SCHEMA)
