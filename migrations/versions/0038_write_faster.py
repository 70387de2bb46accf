"""The write path made faster again (issue 24): insert_memory_v5 and write_memory_v4.

Revision ID: 0038_write_faster
Revises: 0030_write_fast
Create Date: 2026-12-04

insert_memory_v5 checks the embedding model once, under the table lock a re-embed switch
waits for, instead of twice, and tests the paused partition only for automatic actors;
read the header of sql/functions/memory_v8.sql for what was measured. insert_memory_v4 and
write_memory_v3 (0030_write_fast) stay: the previous release (aeac65f) calls them, and its
processes keep writing beside this one's during a rolling upgrade; the release after this
one retires them.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0038_write_faster"
down_revision: str | None = "0030_write_fast"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/memory_v8.sql")


def downgrade() -> None:
    run_sql_file("functions/memory_v8.down.sql")
