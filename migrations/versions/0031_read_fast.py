"""The read path without re-planning, one plain body per mode (issue 24, the read rows):
search_memories_v6, recall_memories_v2.

Revision ID: 0031_read_fast
Revises: 0033_distill
Create Date: 2026-12-04

The functions are sql/functions/memory_v6.sql: read its header for what changed and why.
Release 5's entry points (search_memories_v5, recall_memories_v1 and their keyword/hybrid
body score_memories_v2) stay installed: the previous release (2d905c5) calls them, and a
rolling upgrade runs its processes beside these (sql/PREVIOUS_RELEASE.txt). The release
after this one retires them.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0031_read_fast"
down_revision: str | None = "0033_distill"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/memory_v6.sql")


def downgrade() -> None:
    run_sql_file("functions/memory_v6.down.sql")
