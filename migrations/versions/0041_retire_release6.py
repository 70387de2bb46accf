"""Retire SQL of release 6: drop the versions nothing calls now that the previous release
is e0bf65d (sql/PREVIOUS_RELEASE.txt regenerated from it).

Revision ID: 0041_retire_release6
Revises: 0039_reembed_lock_order
Create Date: 2026-12-04

Dropped: every installed version that neither the Python, another live function, a
trigger or view, nor the previous release calls any more. 0038_write_faster,
0037_hybrid_fast and 0039_reembed_lock_order kept them because the release before
(aeac65f) still called them; e0bf65d calls insert_memory_v5, write_memory_v4,
recall_memories_v3 and reembed_switch_v2 instead. Read from a migrated database with
tests/support/sql_usage.py; tests/migration/test_orphan_sql.py fails if this drops
anything live or leaves an orphan.

Their files stay in sql/functions (released files are immutable, older migrations run
them); the downgrade re-installs each, with its comment, from those files, in the order
the migrations first ran them.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import reinstall_retired, signature_names

revision: str = "0041_retire_release6"
down_revision: str | None = "0039_reembed_lock_order"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
RETIRED: tuple[str, ...] = (
    # re-embed: reembed_switch_v2 (0039_reembed_lock_order) takes its locks in one order
    "reembed_switch_v1(text,text,text,text,integer,timestamp with time zone)",
    # reads: recall_memories_v3 (0037_hybrid_fast)
    "recall_memories_v2(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision,text,text,text,text,integer,boolean)",
    # writes: insert_memory_v5 / write_memory_v4 (0038_write_faster)
    "insert_memory_v4(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,text[],text,text,text)",
    "write_memory_v3(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,double precision,text[],text,text,text)",
)

#: The released files that create or comment on a retired version, in the order their
#: migrations first ran them (the downgrade re-runs exactly those statements).
RELEASED_FILES: tuple[str, ...] = (
    "functions/reembed_v1.sql",  # 0004_reembed_knowledge
    "functions/comments_v1.sql",  # 0006_model_checks_citus_keys
    "functions/memory_v7.sql",  # 0030_write_fast
    "functions/memory_v6.sql",  # 0031_read_fast
)


def retired_names() -> set[str]:
    return signature_names(RETIRED)


def reinstall_statements() -> list[str]:
    """The CREATE and COMMENT statements that bring every retired version back."""
    return reinstall_retired(RELEASED_FILES, RETIRED)


def upgrade() -> None:
    # One statement: write_memory_v3 calls insert_memory_v4.
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))


def downgrade() -> None:
    run_sql(";\n".join(reinstall_statements()))
