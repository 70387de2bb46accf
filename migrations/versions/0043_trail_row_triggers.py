"""The trail triggers row-level: record_memory_change_row_v1 (trail v4).

Revision ID: 0043_trail_row_triggers
Revises: 0042_sweep_bounds_per_pass
Create Date: 2026-12-04

trail_v3's statement triggers had transition tables, which PostgreSQL fills for every row a
statement changes even when the trigger's WHEN (amrita_memory.history_by_writer) keeps it
from firing: the insert and the sweep, which record their own history, still copied every
memory row they wrote. Row-level triggers with the same WHEN queue nothing for them; every
other path is recorded as before, row by row. Read the header of sql/functions/trail_v4.sql.

record_memory_change_v2 (trail_v2.sql) and memory_fields_v1 (trail_v1.sql, which only v2
called), then called by no trigger and by no Python of any release, are dropped as
0023_l2_fast dropped record_memory_change_v1 (tests/migration/test_orphan_sql.py allows no
uncalled function); the downgrade re-installs them from those files first.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql, run_sql_file
from amrita_memory_pg.storage.pg.sqlfile import released_definitions

revision: str = "0043_trail_row_triggers"
down_revision: str | None = "0042_sweep_bounds_per_pass"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: called by no trigger once trail_v4.sql re-points them (and by no Python, of any release)
RETIRED_TRIGGER_FUNCTION = "record_memory_change_v2"
#: called only by record_memory_change_v2 (the writers and v4 use memory_fields_v2)
RETIRED_HELPER = "memory_fields_v1"


def upgrade() -> None:
    run_sql_file("functions/trail_v4.sql")
    run_sql(
        f"DROP FUNCTION amrita_memory.{RETIRED_TRIGGER_FUNCTION}(), "
        f"amrita_memory.{RETIRED_HELPER}(text, text[], smallint, text, text, text)"
    )


def downgrade() -> None:
    run_sql(
        ";\n".join(
            released_definitions(["functions/trail_v1.sql"], [RETIRED_HELPER])
            + released_definitions(["functions/trail_v2.sql"], [RETIRED_TRIGGER_FUNCTION])
        )
    )
    run_sql_file("functions/trail_v4.down.sql")
