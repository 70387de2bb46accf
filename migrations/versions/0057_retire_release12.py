"""Retire SQL of release 12: drop the versions nothing calls now that the previous release
is 27c51b0 (sql/PREVIOUS_RELEASE.txt regenerated from it).

Revision ID: 0057_retire_release12
Revises: 0056_walk_by_primary_key
Create Date: 2026-12-05

Dropped: sweep_batch_v7 (sweep_v7.sql) and reembed_pending_v1 (reembed_v1.sql).
0056_walk_by_primary_key kept both because the release before (2548392) still called them;
27c51b0 calls sweep_batch_v8 and reembed_pending_memories_v1 (reembed_v3.sql), which walk
the primary key. sweep_cutoff_v1 (sweep_v7.sql) stays: v8 decides by it.
Read from a migrated database with tests/support/sql_usage.py;
tests/migration/test_orphan_sql.py fails if this drops anything live or leaves an orphan.

sweep_state.cursor_id, the dropped version's cursor, stays one more release: 27c51b0's
clear_store query (a restore) still resets it. Its comment says so now.

Their files stay in sql/functions (released files are immutable, older migrations run
them); the downgrade re-installs them, with their comments, from those files.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import reinstall_retired, signature_names

revision: str = "0057_retire_release12"
down_revision: str | None = "0056_walk_by_primary_key"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
RETIRED: tuple[str, ...] = (
    # the re-embed's memory pages: reembed_pending_memories_v1 (0056_walk_by_primary_key)
    "reembed_pending_v1(text,text,text,integer)",
    # the sweep: sweep_batch_v8 (0056_walk_by_primary_key)
    "sweep_batch_v7(timestamp with time zone,double precision,double precision,integer,"
    "boolean,boolean,boolean,text,text)",
)

#: The released files that create or comment on a retired version, in the order their
#: migrations first ran them (the downgrade re-runs exactly those statements).
RELEASED_FILES: tuple[str, ...] = (
    "functions/reembed_v1.sql",  # 0004_reembed_knowledge
    "functions/comments_v1.sql",  # 0006_model_checks_citus_keys
    "functions/sweep_v7.sql",  # 0054_sweep_by_tid
)

CURSOR_ID_COMMENT = (
    "unused since 0057_retire_release12 (the retired id-order sweep's cursor); kept while the "
    "previous release's restore resets it"
)
CURSOR_ID_COMMENT_BEFORE = (
    "sweep_batch_v7's cursor (the previous release): last memory id swept; '' = start"
)


def retired_names() -> set[str]:
    return signature_names(RETIRED)


def reinstall_statements() -> list[str]:
    """The CREATE and COMMENT statements that bring every retired version back."""
    return reinstall_retired(RELEASED_FILES, RETIRED)


def _comment_cursor_id(text: str) -> str:
    return (
        "COMMENT ON COLUMN amrita_memory.sweep_state.cursor_id IS '" + text.replace("'", "''") + "'"
    )


def upgrade() -> None:
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))
    run_sql(_comment_cursor_id(CURSOR_ID_COMMENT))


def downgrade() -> None:
    run_sql(_comment_cursor_id(CURSOR_ID_COMMENT_BEFORE))
    run_sql(";\n".join(reinstall_statements()))
