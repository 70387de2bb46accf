"""The read path without re-planning, one plain body per mode (issue 24, the read rows):
search_memories_v6, recall_memories_v2.

Revision ID: 0031_read_fast
Revises: 0033_distill
Create Date: 2026-12-04

The functions are sql/functions/memory_v6.sql: read its header for what changed and why.
Release 5's entry points (search_memories_v5, recall_memories_v1 and their keyword/hybrid
body score_memories_v2) were never called by a released version and nothing calls them
now, so they go; their vector bodies (search_vector_exact_v5, search_vector_ann_v5) stay,
v6 calls them. The downgrade re-installs the three from memory_v5.sql.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql, run_sql_file
from amrita_memory_pg.storage.pg.sqlfile import released_definitions

revision: str = "0031_read_fast"
down_revision: str | None = "0033_distill"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: release 5's functions that v6 replaces (signatures as memory_v5.down.sql drops them)
RETIRED = {
    "recall_memories_v1": "text, vector, text[], text, integer, timestamptz, boolean, float8, "
    "float8, float8, integer, integer, text, text[], text, integer, text, float8, float8, text, "
    "text, text, text, integer, boolean",
    "search_memories_v5": "text, vector, text[], text, integer, timestamptz, boolean, float8, "
    "float8, float8, integer, integer, text, text[], text, integer, text, float8, float8",
    "score_memories_v2": "text, vector, text[], tsquery, text, integer, timestamptz, boolean, "
    "float8, float8, float8, integer, integer, text, text[], text, text, float8, float8, text[]",
}


def upgrade() -> None:
    run_sql_file("functions/memory_v6.sql")
    for name, args in RETIRED.items():
        run_sql(f"DROP FUNCTION amrita_memory.{name}({args})")


def downgrade() -> None:
    # callees first: score_memories_v2, then search_memories_v5, then recall_memories_v1
    run_sql(";\n".join(released_definitions(["functions/memory_v5.sql"], list(RETIRED))))
    run_sql_file("functions/memory_v6.down.sql")
