"""Idempotent L2 writes: write_memory_v1 (a retried identical write returns the first one).

Revision ID: 0007_idempotent_write
Revises: 0006_model_checks_citus_keys
Create Date: 2026-12-05

The function is additive: insert_memory_v2 (0006) stays, and is what it calls after the
lookup.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0007_idempotent_write"
down_revision: str | None = "0006_model_checks_citus_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/write_memory_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/write_memory_v1.down.sql")
