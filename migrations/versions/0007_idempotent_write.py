"""Idempotent L2 writes: write_memory_v1 (a retried identical write returns the first one).

Revision ID: 0007_idempotent_write
Revises: 0005_search_v2
Create Date: 2026-12-05

Numbered 0007 because another line of work adds a 0006; whoever merges both re-chains
``down_revision`` onto the newer head. The function is additive (insert_memory_v1 stays
and is what it calls), so the order of the two does not matter to the schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0007_idempotent_write"
down_revision: str | None = "0005_search_v2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/write_memory_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/write_memory_v1.down.sql")
