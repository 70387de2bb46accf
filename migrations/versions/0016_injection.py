"""Per-turn injection as a named SQL function: memory_block_v1.

Revision ID: 0016_injection
Revises: 0015_hybrid
Create Date: 2026-12-03

The body is the statement the block query ran until now; as a function with
plan_cache_mode = force_generic_plan it is planned once per connection instead of on
every turn (sql/functions/injection_v1.sql says why).
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0016_injection"
down_revision: str | None = "0015_hybrid"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/injection_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/injection_v1.down.sql")
