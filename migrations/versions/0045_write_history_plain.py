"""The write's create history row as a plain INSERT (issue 24): insert_memory_v6 and
write_memory_v5.

Revision ID: 0045_write_history_plain
Revises: 0044_retire_release7
Create Date: 2026-12-04

insert_memory_v6 is insert_memory_v5 with its create history row written by its own
INSERT ... VALUES from the arguments instead of a second data-modifying CTE over the
inserted row (same row, same checks); read the header of sql/functions/memory_v9.sql for
what was measured. insert_memory_v5 and write_memory_v4 (0038_write_faster) stay: the
previous release (d58e458) calls them, and its processes keep writing beside this one's
during a rolling upgrade; the release after this one retires them.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0045_write_history_plain"
down_revision: str | None = "0044_retire_release7"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/memory_v9.sql")


def downgrade() -> None:
    run_sql_file("functions/memory_v9.down.sql")
