"""partition_count: the cap reads a kept per-partition row count instead of count(*)

Revision ID: 0061_partition_count
Revises: 0060_block_candidates

The count is kept exact in the writing transaction by statement triggers on the memory
table (transition tables; a row trigger for a partition move), so every path is counted,
the previous release's functions included; insert_memory_v7 (counting its own row),
write_memory_v6 and import_memory_v2 read it; partition_count_check_v1 lists and repairs a
drifted count. Why: the cap's count(*) was a write's whole cost in a large partition (19.8
ms of a write into a 50,000-row group).

0061_partition_count.sql brings the functions, views and triggers of the previous head to
the live files' (sql/functions); 0061_partition_count.down.sql brings them back. Both are
frozen with this migration (written by tests/support/sql_migration.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0061_partition_count"
down_revision: str | None = "0060_block_candidates"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HERE = Path(__file__)


#: Writers wait from here to the commit (SHARE ROW EXCLUSIVE conflicts with the ROW
#: EXCLUSIVE every INSERT, UPDATE and DELETE takes; reads go on): no row can be written
#: between the count below and the triggers that keep it from then on.
HOLD_WRITERS = "LOCK TABLE amrita_memory.memory IN SHARE ROW EXCLUSIVE MODE"

#: The counts of the rows there are (in key order: the same order the triggers lock in).
BACKFILL = """
INSERT INTO amrita_memory.partition_count (partition_key, n)
SELECT m.partition_key, count(*)
  FROM amrita_memory.memory m
 GROUP BY m.partition_key
 ORDER BY m.partition_key
"""


def upgrade() -> None:
    # table changes (op.*) go first: the definitions below may use them
    op.create_table(
        "partition_count",
        sa.Column("partition_key", sa.Text(), nullable=False),
        sa.Column(
            "n",
            sa.BigInteger(),
            nullable=False,
            comment="the partition's memory rows, kept by the memory table's triggers in the "
            "writing transaction (the partition_count_* triggers)",
        ),
        sa.PrimaryKeyConstraint("partition_key", name="pk_partition_count"),
        schema="amrita_memory",
        comment="Memories per partition, what the cap reads instead of counting the rows; "
        "no row = none",
    )
    op.execute("ALTER TABLE amrita_memory.partition_count SET (fillfactor = 50)")
    op.execute(HOLD_WRITERS)
    op.execute(BACKFILL)
    run_sql_file(HERE.with_suffix(".sql"))


def downgrade() -> None:
    run_sql_file(HERE.with_suffix(".down.sql"))
    op.drop_table("partition_count", schema="amrita_memory")
