"""The walks over the whole table go in the primary key's order; ix_memory_id is dropped.

Revision ID: 0056_walk_by_primary_key
Revises: 0055_retire_release11
Create Date: 2026-12-05

Every walk over the memories (the sweep, the re-embed, the Chroma rebuild, the
re-tokenizing) went in id order, on an index of its own beside the primary key
(partition_key, id): one more random B-tree leaf on every insert, after a checkpoint one
more full-page image in its commit's WAL (0.95x of the write's p50 without it; read the
header of sql/functions/sweep_v8.sql). The walks now use the primary key's order:
sweep_batch_v8 (sweep_v8.sql) with its cursor in the new sweep_state.cursor_key
('partition_key/id', carried over from cursor_id's memory), reembed_pending_memories_v1
(reembed_v3.sql); the Chroma and token walks are queries. Every lookup of a memory
already names its partition.

During a rolling upgrade the previous release still calls sweep_batch_v7 and
reembed_pending_v1: without the index each of their batches sorts the table (slower,
still correct); cursor_id stays theirs. The downgrade builds the index again.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0056_walk_by_primary_key"
down_revision: str | None = "0055_retire_release11"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.add_column(
        "sweep_state",
        sa.Column(
            "cursor_key",
            sa.Text(),
            nullable=False,
            server_default=sa.text("''::text"),
            comment="partition_key/id of the last memory swept (sweep_batch_v8, primary key "
            "order); '' = start",
        ),
        schema=SCHEMA,
    )
    op.execute(
        f"COMMENT ON COLUMN {SCHEMA}.sweep_state.cursor_id IS"
        " 'sweep_batch_v7''s cursor (the previous release): last memory id swept; '''' = start'"
    )
    # the position of the memory the old cursor names (it uses the index, still there);
    # a cursor whose memory is gone starts the next run from the start: one more pass
    op.execute(
        f"UPDATE {SCHEMA}.sweep_state s"
        "   SET cursor_key = coalesce((SELECT m.partition_key || '/' || m.id"
        f"                               FROM {SCHEMA}.memory m WHERE m.id = s.cursor_id), '')"
        " WHERE s.cursor_id <> ''"
    )
    run_sql_file("functions/sweep_v8.sql")
    run_sql_file("functions/reembed_v3.sql")
    op.drop_index("ix_memory_id", table_name="memory", schema=SCHEMA)


def downgrade() -> None:
    op.create_index("ix_memory_id", "memory", ["id"], unique=False, schema=SCHEMA)
    run_sql_file("functions/reembed_v3.down.sql")
    run_sql_file("functions/sweep_v8.down.sql")
    op.execute(
        f"COMMENT ON COLUMN {SCHEMA}.sweep_state.cursor_id IS 'last memory id swept; '''' = start'"
    )
    op.drop_column("sweep_state", "cursor_key", schema=SCHEMA)
