"""Function comments say what each function does now

Revision ID: 0058_comments_name_the_present
Revises: 0057_retire_release12

The comments of the functions the baseline installed named versions that are retired
(memory_block_v1, search_memories_v7, ...), releases by number and files that are gone
(sql/functions/job_v1.sql and the like); psql's \\df+ shows them to an operator. They now
say what the function does, and name the live file where one is named.

0058_comments_name_the_present.sql brings the functions, views and triggers of the
previous head to the live files' (sql/functions); 0058_comments_name_the_present.down.sql
brings them back. Both are frozen with this migration (written by
tests/support/sql_migration.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0058_comments_name_the_present"
down_revision: str | None = "0057_retire_release12"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HERE = Path(__file__)


def upgrade() -> None:
    # table changes (op.*) go first: the definitions below may use them
    run_sql_file(HERE.with_suffix(".sql"))


def downgrade() -> None:
    run_sql_file(HERE.with_suffix(".down.sql"))
    # then the table changes undone (op.*)
