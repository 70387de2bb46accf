"""Knowledge distillation: the L3 loop's candidate query and the index it reads.

Revision ID: 0033_distill
Revises: 0035_page_export
Create Date: 2026-12-04

Issue 25 item 5. ``knowledge_candidates_v1`` (sql/functions/distill_v1.sql) finds the
memories of a partition worth a global knowledge entry; the partial index
``ix_memory_knowledge`` keeps its cross-partition side to the rows of category
``knowledge``. Additive: older code neither calls the function nor notices the index.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0033_distill"
down_revision: str | None = "0035_page_export"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.create_index(
        "ix_memory_knowledge",
        "memory",
        ["partition_key"],
        schema=SCHEMA,
        postgresql_where=sa.text("category = 'knowledge'"),
    )
    run_sql_file("functions/distill_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/distill_v1.down.sql")
    op.drop_index("ix_memory_knowledge", table_name="memory", schema=SCHEMA)
