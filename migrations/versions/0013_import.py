"""Import from another installation: import_memory_v1 (merge one memory under the cap).

Revision ID: 0013_import
Revises: 0012_seed_model
Create Date: 2026-12-03

Additive: one function, no table. A killed ``import-legacy`` resumes through
idempotence (rows already imported come back as ``present``/``unchanged`` and are not
embedded again), so no progress table is needed.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0013_import"
down_revision: str | None = "0012_seed_model"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/import_memory_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/import_memory_v1.down.sql")
