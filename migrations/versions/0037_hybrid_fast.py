"""Keyword and hybrid reads and the read_memory round trip made cheaper (issue 24, the rows
still over target): search_memories_v7, recall_memories_v3.

Revision ID: 0037_hybrid_fast
Revises: 0040_retire_release5
Create Date: 2026-12-04

The functions are sql/functions/search_v7.sql: read its header for what was measured and
why. Release 6's entry points (search_memories_v6, recall_memories_v2) stay installed: the
previous release (aeac65f, sql/PREVIOUS_RELEASE.txt) calls them, and a rolling upgrade runs
its processes beside these; search_memories_v7 itself still hands a partition with its own
HNSW index to search_memories_v6.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0037_hybrid_fast"
down_revision: str | None = "0040_retire_release5"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/search_v7.sql")


def downgrade() -> None:
    run_sql_file("functions/search_v7.down.sql")
