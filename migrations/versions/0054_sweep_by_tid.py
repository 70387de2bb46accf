"""The sweep decides by three cutoffs per batch and reaches its due rows by tid: sweep_batch_v7.

Revision ID: 0054_sweep_by_tid
Revises: 0053_retire_release10
Create Date: 2026-12-05

sweep_batch_v6 computed each row's action with the inlined decay functions (numeric
epoch arithmetic on every row) and looked every due row up by its id three times (lock,
then demote or purge). v7 computes the tiers' cutoffs once per batch (sweep_cutoff_v1)
and reaches a due row by the tid the batch read: 0.81x of v6 in the lab. Same rows
changed, same replies, same history; a row changed by someone else after the batch read
it is skipped until the next run, like a locked one. Read the header of
sql/functions/sweep_v7.sql. v6 stays (the previous release calls it).
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql, run_sql_file

revision: str = "0054_sweep_by_tid"
down_revision: str | None = "0053_retire_release10"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    run_sql_file("functions/sweep_v7.sql")


def downgrade() -> None:
    run_sql(
        f"DROP FUNCTION {SCHEMA}.sweep_batch_v7(timestamptz, float8, float8, integer, boolean,"
        " boolean, boolean, text, text);"
        f" DROP FUNCTION {SCHEMA}.sweep_cutoff_v1(timestamptz, float8)"
    )
