"""Keyword and hybrid reads find a row's matching lexemes by intersection (issue 24):
score_keyword_v8, score_hybrid_rrf_v8, score_hybrid_weighted_v8, search_memories_v8 and
recall_memories_v4.

Revision ID: 0048_keyword_intersect
Revises: 0047_retire_release8
Create Date: 2026-12-04

The v7 bodies with one expression changed: a matching row's lexemes are its tsvector minus
(itself minus the query's tokens), two ts_delete, instead of an unnest of every lexeme it
has filtered by the tokens (a real Chinese memory has ~63); the scores are v7's bit for bit.
Read the header of sql/functions/search_v8.sql for what was measured. search_memories_v7
and recall_memories_v3 (0037_hybrid_fast) stay: the previous release (fee0a57) calls them
during a rolling upgrade; the release after this one retires them.
"""

from __future__ import annotations

from collections.abc import Sequence

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0048_keyword_intersect"
down_revision: str | None = "0047_retire_release8"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql_file("functions/search_v8.sql")


def downgrade() -> None:
    run_sql_file("functions/search_v8.down.sql")
