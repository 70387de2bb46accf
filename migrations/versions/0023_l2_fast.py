"""The L2 hot paths made fast again (issue 24): search_memories_v5, recall_memories_v1, trail v2.

Revision ID: 0023_l2_fast
Revises: 0020_block_pause
Create Date: 2026-12-04

Additive: search_memories_v4 and score_memories_v1 stay, so older processes keep working on
an upgraded schema (rolling upgrade). The functions are sql/functions/memory_v5.sql: read
its header for what changed and why. The change-history trigger moves to
record_memory_change_v2 (sql/functions/trail_v2.sql): the same rows, without a query per
changed memory (the sweep's history cost).
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0023_l2_fast"
down_revision: str | None = "0020_block_pause"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/memory_v5.sql")
    run_sql_file("functions/trail_v2.sql")


def downgrade() -> None:
    run_sql_file("functions/trail_v2.down.sql")
    run_sql_file("functions/memory_v5.down.sql")
