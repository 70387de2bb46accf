"""The L2 hot paths made fast again (issue 24): search_memories_v5, recall_memories_v1, trail v2.

Revision ID: 0023_l2_fast
Revises: 0029_dropin
Create Date: 2026-12-04

Additive: search_memories_v4 and score_memories_v1 stay, so older processes keep working on
an upgraded schema (rolling upgrade). The functions are sql/functions/memory_v5.sql: read
its header for what changed and why. The change-history trigger moves to
record_memory_change_v2 (sql/functions/trail_v2.sql): the same rows, without a query per
changed memory (the sweep's history cost); record_memory_change_v1, then called by no
trigger, is dropped (the downgrade re-installs it from trail_v1.sql).
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql, run_sql_file
from amrita_memory_pg.storage.pg.sqlfile import released_definitions

revision: str = "0023_l2_fast"
down_revision: str | None = "0029_dropin"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


#: called by no trigger once trail_v2.sql re-points them (and by no Python, of any release)
RETIRED_TRIGGER_FUNCTION = "record_memory_change_v1"


def upgrade() -> None:
    run_sql_file("functions/memory_v5.sql")
    run_sql_file("functions/trail_v2.sql")
    run_sql(f"DROP FUNCTION amrita_memory.{RETIRED_TRIGGER_FUNCTION}()")


def downgrade() -> None:
    run_sql(
        ";\n".join(released_definitions(["functions/trail_v1.sql"], [RETIRED_TRIGGER_FUNCTION]))
    )
    run_sql_file("functions/trail_v2.down.sql")
    run_sql_file("functions/memory_v5.down.sql")
