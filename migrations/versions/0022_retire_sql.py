"""Retire SQL (issue 22, item 3): drop the function versions nothing calls any more.

Revision ID: 0022_retire_sql
Revises: 0021_origin
Create Date: 2026-12-04

Dropped: every installed version that neither the Python (its named queries), another
live function, a trigger or view, nor the previous release calls (sql/PREVIOUS_RELEASE.txt:
during a rolling upgrade the previous release runs beside this one on this schema). The
list was read from a migrated database with tests/support/sql_usage.py, and
tests/migration/test_orphan_sql.py fails if anything uncalled stays installed.

Their files stay in sql/functions (released files are immutable and never deleted: older
migrations still run them); the downgrade re-installs each dropped function, with its
comment, from those files, in the order the migrations first ran them.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import released_definitions

revision: str = "0022_retire_sql"
down_revision: str | None = "0021_origin"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
RETIRED: tuple[str, ...] = (
    # search: v4 (hybrid, 0015) calls search_memories_ann_v3 and score_memories_v1
    "search_memories_v1(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],integer)",
    "search_memories_v2(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],integer)",
    "search_memories_v3(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],integer)",
    "search_memories_exact_v2(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[])",
    "search_memories_exact_v3(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[])",
    # writes: insert_memory_v3, write_memory_v2, update_memory_v3
    "insert_memory_v1(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,text,text,text)",
    "insert_memory_v2(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,text,text,text)",
    "write_memory_v1(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,double precision,text,text,text)",
    "update_memory_v1(text,text,text,text[],integer,boolean,text,vector,text,timestamp with time zone)",
    "update_memory_v2(text,text,text,text[],integer,boolean,text,vector,text,timestamp with time zone,boolean)",
    # sweep: sweep_batch_v2; injection: memory_block_v2
    "sweep_batch_v1(timestamp with time zone,double precision,double precision,integer,boolean,boolean,text,text)",
    "memory_block_v1(text[],text,text[],integer,vector,integer,text)",
    # knowledge: knowledge_create_v2, knowledge_search_v2, reembed_pending_knowledge_v2
    # (knowledge_update_v1 stays: knowledge_update_v2 calls it)
    "knowledge_create_v1(text,text,text,text,vector,text,integer,timestamp with time zone,text,text,text)",
    "knowledge_search_v1(vector,integer)",
    "reembed_pending_knowledge_v1(text,text,integer)",
)

#: Every released function file up to this revision, in the order its migration ran it.
RELEASED_FILES: tuple[str, ...] = (
    "functions/decay_v1.sql",  # 0001
    "functions/memory_v1.sql",  # 0002
    "functions/memo_v1.sql",  # 0003
    "functions/chat_activity_v1.sql",
    "functions/reembed_v1.sql",  # 0004
    "functions/memory_v2.sql",  # 0005
    "functions/memory_v3.sql",  # 0006
    "functions/comments_v1.sql",
    "functions/write_memory_v1.sql",  # 0007
    "functions/l3_v1.sql",  # 0009
    "functions/profile_v1.sql",  # 0010
    "functions/knowledge_v1.sql",  # 0011
    "functions/protect_manual_v1.sql",  # 0012
    "functions/import_memory_v1.sql",  # 0013
    "functions/sweep_v2.sql",  # 0014
    "functions/memory_v4.sql",  # 0015
    "functions/injection_v1.sql",  # 0016
    "functions/knowledge_v2.sql",  # 0017
    "functions/trail_v1.sql",  # 0019
    "functions/injection_v2.sql",  # 0020
    "functions/origin_v1.sql",  # 0021
)


def retired_names() -> set[str]:
    return {signature.split("(", 1)[0] for signature in RETIRED}


def reinstall_statements() -> list[str]:
    """The CREATE and COMMENT statements that bring every retired version back."""
    statements = released_definitions(RELEASED_FILES, retired_names())
    created = [s for s in statements if s.upper().startswith("CREATE")]
    assert len(created) == len(RETIRED), "each retired function is created by one released file"
    return statements


def upgrade() -> None:
    # One statement: the retired versions call each other (v2 -> v1), so they go together.
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))


def downgrade() -> None:
    run_sql(";\n".join(reinstall_statements()))
