"""The re-embed switch without a deadlock: reembed_switch_v2 (a consistent lock order).

Revision ID: 0039_reembed_lock_order
Revises: 0037_hybrid_fast
Create Date: 2026-12-04

reembed_switch_v1 locked memory and knowledge IN SHARE ROW EXCLUSIVE MODE, which a row
lock (SELECT ... FOR UPDATE, as update_memory_v3 takes before its UPDATE) does not wait
for: the switch's UPDATE then waited for the edit's row while the edit's UPDATE waited for
the switch's table lock (40P01, seen once in bench/load.py). v2 takes EXCLUSIVE (ACCESS
EXCLUSIVE when an ANN index of another dimension is dropped) first; read the header of
sql/functions/reembed_v2.sql. reembed_switch_v1 stays (the previous release calls it).
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0039_reembed_lock_order"
down_revision: str | None = "0037_hybrid_fast"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/reembed_v2.sql")


def downgrade() -> None:
    run_sql_file("functions/reembed_v2.down.sql")
