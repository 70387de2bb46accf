"""Retire SQL of release 9: drop the versions nothing calls now that the previous release
is 7a5abd4 (sql/PREVIOUS_RELEASE.txt regenerated from it).

Revision ID: 0051_retire_release9
Revises: 0050_ann_lease
Create Date: 2026-12-04

Dropped: search_memories_v7, recall_memories_v3 and the three scoring bodies only they
called (score_keyword_v7, score_hybrid_rrf_v7, score_hybrid_weighted_v7). 0048_keyword_intersect
kept them because the release before (fee0a57) still called them; 7a5abd4 calls
search_memories_v8 / recall_memories_v4 (search_v8.sql) instead.
Read from a migrated database with tests/support/sql_usage.py;
tests/migration/test_orphan_sql.py fails if this drops anything live or leaves an orphan.

Their file stays in sql/functions (released files are immutable, older migrations run it);
the downgrade re-installs them, with their comments, from that file.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import reinstall_retired, signature_names

revision: str = "0051_retire_release9"
down_revision: str | None = "0050_ann_lease"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SCORE = (
    "text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,"
    "double precision,double precision,integer,integer,text,text[],text,double precision"
)
_SEARCH = (
    "text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,"
    "double precision,double precision,integer,integer,text,text[],text,integer,text,"
    "double precision,double precision"
)

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
#: The entry points come first: they call the bodies.
RETIRED: tuple[str, ...] = (
    # the chat tool's read: recall_memories_v4 (0048_keyword_intersect)
    f"recall_memories_v3({_SEARCH},text,text,text,text,integer,boolean)",
    # every other search: search_memories_v8 (0048_keyword_intersect)
    f"search_memories_v7({_SEARCH})",
    # their bodies: score_hybrid_rrf_v8, score_hybrid_weighted_v8, score_keyword_v8
    f"score_hybrid_rrf_v7({_SCORE})",
    f"score_hybrid_weighted_v7({_SCORE})",
    "score_keyword_v7(text,text[],tsquery,integer,timestamp with time zone,boolean,"
    "double precision,double precision,double precision,integer,integer,text,text[],text)",
)

#: The released files that create or comment on a retired version, in the order their
#: migrations first ran them (the downgrade re-runs exactly those statements).
RELEASED_FILES: tuple[str, ...] = ("functions/search_v7.sql",)  # 0037_hybrid_fast


def retired_names() -> set[str]:
    return signature_names(RETIRED)


def reinstall_statements() -> list[str]:
    """The CREATE and COMMENT statements that bring every retired version back."""
    return reinstall_retired(RELEASED_FILES, RETIRED)


def upgrade() -> None:
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))


def downgrade() -> None:
    run_sql(";\n".join(reinstall_statements()))
