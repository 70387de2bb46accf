"""The write path and the sweep made fast again (issue 24): insert_memory_v4, write_memory_v3,
sweep_batch_v4, trail v3.

Revision ID: 0030_write_fast
Revises: 0036_retire_release4
Create Date: 2026-12-04

The insert and the sweep write their own change history in their own statement; the trail
triggers stay out of those statements (a WHEN on amrita_memory.history_by_writer) and record
every other path as before. Read the headers of sql/functions/trail_v3.sql, memory_v7.sql
and sweep_v4.sql for what was measured and why. insert_memory_v3, write_memory_v2 and
sweep_batch_v3 stay (the previous release, 2d905c5, calls them: older processes keep working
on an upgraded schema, their writes recorded by the trigger); the release after this one
retires them.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0030_write_fast"
down_revision: str | None = "0036_retire_release4"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/trail_v3.sql")
    run_sql_file("functions/memory_v7.sql")
    run_sql_file("functions/sweep_v4.sql")


def downgrade() -> None:
    run_sql_file("functions/sweep_v4.down.sql")
    run_sql_file("functions/memory_v7.down.sql")
    run_sql_file("functions/trail_v3.down.sql")
