"""Faster exact retrieval: search_memories_v2 (same results as v1, which stays).

Revision ID: 0005_search_v2
Revises: 0004_reembed_knowledge
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0005_search_v2"
down_revision: str | None = "0004_reembed_knowledge"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/memory_v2.sql")


def downgrade() -> None:
    run_sql_file("functions/memory_v2.down.sql")
