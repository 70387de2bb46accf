"""Retire SQL of release 5: drop the versions nothing calls now that the previous release
is aeac65f (sql/PREVIOUS_RELEASE.txt regenerated from it).

Revision ID: 0040_retire_release5
Revises: 0038_write_faster
Create Date: 2026-12-04

Dropped: every installed version that neither the Python, another live function, a
trigger or view, nor the previous release calls any more. 0030_write_fast and
0031_read_fast kept them because the release before (2d905c5) still called them; aeac65f
calls insert_memory_v4, write_memory_v3, search_memories_v6, recall_memories_v2 and
sweep_batch_v4 instead. Read from a migrated database with tests/support/sql_usage.py;
tests/migration/test_orphan_sql.py fails if this drops anything live or leaves an orphan.

Their files stay in sql/functions (released files are immutable, older migrations run
them); the downgrade re-installs each, with its comment, from those files, in the order
the migrations first ran them.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import reinstall_retired, signature_names

revision: str = "0040_retire_release5"
down_revision: str | None = "0038_write_faster"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
RETIRED: tuple[str, ...] = (
    # writes: insert_memory_v4 / write_memory_v3 (0030_write_fast), then v5 / v4
    "insert_memory_v3(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,text[],text,text,text)",
    "write_memory_v2(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,double precision,text[],text,text,text)",
    # reads: search_memories_v6 / recall_memories_v2 (0031_read_fast) and what follows them;
    # score_memories_v2 was called by search_memories_v5 and recall_memories_v1 only
    "recall_memories_v1(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision,text,text,text,text,integer,boolean)",
    "search_memories_v5(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision)",
    "score_memories_v2(text,vector,text[],tsquery,text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,text,double precision,double precision,text[])",
    # sweep: sweep_batch_v4 (0030_write_fast)
    "sweep_batch_v3(timestamp with time zone,double precision,double precision,integer,boolean,boolean,boolean,text,text)",
)

#: The released files that create or comment on a retired version, in the order their
#: migrations first ran them (the downgrade re-runs exactly those statements).
RELEASED_FILES: tuple[str, ...] = (
    "functions/memory_v4.sql",  # 0015
    "functions/memory_v5.sql",  # 0023_l2_fast
    "functions/sweep_v3.sql",  # 0028_sweep_pause
)


def retired_names() -> set[str]:
    return signature_names(RETIRED)


def reinstall_statements() -> list[str]:
    """The CREATE and COMMENT statements that bring every retired version back."""
    return reinstall_retired(RELEASED_FILES, RETIRED)


def upgrade() -> None:
    # One statement: recall_memories_v1 and search_memories_v5 call score_memories_v2.
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))


def downgrade() -> None:
    run_sql(";\n".join(reinstall_statements()))
