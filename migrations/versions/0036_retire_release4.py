"""Retire SQL of release 4: drop the versions nothing calls now that the previous release
is 2d905c5 (sql/PREVIOUS_RELEASE.txt regenerated from it).

Revision ID: 0036_retire_release4
Revises: 0031_read_fast
Create Date: 2026-12-04

Dropped: every installed version that neither the Python, another live function, a
trigger or view, nor the previous release calls any more. 0022_retire_sql kept them
because the release before (1c56a5a) still called them; 2d905c5 calls search_memories_v5
and sweep_batch_v3 instead. Read from a migrated database with tests/support/sql_usage.py;
tests/migration/test_orphan_sql.py fails if this drops anything live or leaves an orphan.

Their files stay in sql/functions (released files are immutable, older migrations run
them); the downgrade re-installs each, with its comment, from those files, in the order
the migrations first ran them.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import reinstall_retired, signature_names

revision: str = "0036_retire_release4"
down_revision: str | None = "0031_read_fast"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
RETIRED: tuple[str, ...] = (
    # search: search_memories_v5 (0023_l2_fast) and v6 (0031_read_fast), which inline the
    # filter and the ANN candidates; v4 was the last caller of these two
    "memory_matches_v1(smallint,text,text[],integer,integer,text,text[])",
    "search_memories_ann_v3(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],integer)",
    "search_memories_v4(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision)",
    # sweep: sweep_batch_v3 (0028_sweep_pause)
    "sweep_batch_v2(timestamp with time zone,double precision,double precision,integer,boolean,boolean,boolean,text,text)",
)

#: The released files that create or comment on a retired version, in the order their
#: migrations first ran them (the downgrade re-runs exactly those statements).
RELEASED_FILES: tuple[str, ...] = (
    "functions/memory_v3.sql",  # 0006
    "functions/sweep_v2.sql",  # 0014
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
    # One statement: search_memories_v4 calls the other two search functions.
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))


def downgrade() -> None:
    run_sql(";\n".join(reinstall_statements()))
