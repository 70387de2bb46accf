"""Retire SQL of release 8: drop the versions nothing calls now that the previous release
is fee0a57 (sql/PREVIOUS_RELEASE.txt regenerated from it).

Revision ID: 0047_retire_release8
Revises: 0046_vectors_inline
Create Date: 2026-12-04

Dropped: write_memory_v4. 0045_write_history_plain kept it because the release before
(d58e458) still called it; fee0a57 calls write_memory_v5 (on insert_memory_v6) instead.
insert_memory_v5 stays: fee0a57's bench/bench_trail_rows.py still calls it.
Read from a migrated database with tests/support/sql_usage.py;
tests/migration/test_orphan_sql.py fails if this drops anything live or leaves an orphan.

Its file stays in sql/functions (released files are immutable, older migrations run it);
the downgrade re-installs it, with its comment, from that file.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql
from amrita_memory_pg.storage.pg.sqlfile import reinstall_retired, signature_names

revision: str = "0047_retire_release8"
down_revision: str | None = "0046_vectors_inline"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The retired versions (schema amrita_memory), by identity signature; what replaced each.
RETIRED: tuple[str, ...] = (
    # the chat tool's write: write_memory_v5 (0045_write_history_plain)
    "write_memory_v4(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,double precision,text[],text,text,text)",
)

#: The released files that create or comment on a retired version, in the order their
#: migrations first ran them (the downgrade re-runs exactly those statements).
RELEASED_FILES: tuple[str, ...] = ("functions/memory_v8.sql",)  # 0038_write_faster


def retired_names() -> set[str]:
    return signature_names(RETIRED)


def reinstall_statements() -> list[str]:
    """The CREATE and COMMENT statements that bring every retired version back."""
    return reinstall_retired(RELEASED_FILES, RETIRED)


def upgrade() -> None:
    run_sql("DROP FUNCTION " + ", ".join(f"amrita_memory.{s}" for s in RETIRED))


def downgrade() -> None:
    run_sql(";\n".join(reinstall_statements()))
