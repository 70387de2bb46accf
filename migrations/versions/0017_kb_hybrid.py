"""Hybrid knowledge search: knowledge.search_tokens (tsvector + GIN), search_len, release 2
of the knowledge functions.

Revision ID: 0017_kb_hybrid
Revises: 0016_injection
Create Date: 2026-12-03

As for the memories (0015_hybrid), the column is added empty (NULL = not tokenized yet):
the tokens are made in Python (amrita_memory_pg/domain/tokens.py) from title + summary +
body, so the backfill is the resumable maintenance step
amrita_memory_pg/maintenance/tokens.py, run when a store opens and by
``amrita-memory tokens backfill``; until then old entries are found by their vector only.
``search_len`` (generated, the token count) lets BM25 average the lengths without
reading every tsvector. The functions of release 1 stay (additive).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0017_kb_hybrid"
down_revision: str | None = "0016_injection"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE amrita_memory.knowledge ADD COLUMN search_tokens tsvector NULL")
    op.execute(
        "COMMENT ON COLUMN amrita_memory.knowledge.search_tokens IS "
        "'keyword-search tokens of title + summary + body made in Python (domain/tokens.py); "
        "NULL = not tokenized yet'"
    )
    op.execute(
        "ALTER TABLE amrita_memory.knowledge ADD COLUMN search_len integer "
        "GENERATED ALWAYS AS (length(search_tokens)) STORED"
    )
    op.execute(
        "COMMENT ON COLUMN amrita_memory.knowledge.search_len IS "
        "'number of search tokens (BM25 length normalisation without reading the tsvector)'"
    )
    op.execute(
        "CREATE INDEX ix_knowledge_search_tokens ON amrita_memory.knowledge "
        "USING gin (search_tokens)"
    )
    # The backfill's work list: empty (and free) once every entry has its tokens.
    op.execute(
        "CREATE INDEX ix_knowledge_kid_untokenized ON amrita_memory.knowledge (kid) "
        "WHERE search_tokens IS NULL"
    )
    run_sql_file("functions/knowledge_v2.sql")


def downgrade() -> None:
    run_sql_file("functions/knowledge_v2.down.sql")
    op.execute("DROP INDEX IF EXISTS amrita_memory.ix_knowledge_kid_untokenized")
    op.execute("DROP INDEX IF EXISTS amrita_memory.ix_knowledge_search_tokens")
    op.execute("ALTER TABLE amrita_memory.knowledge DROP COLUMN IF EXISTS search_len")
    op.execute("ALTER TABLE amrita_memory.knowledge DROP COLUMN IF EXISTS search_tokens")
