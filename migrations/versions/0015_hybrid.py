"""Hybrid retrieval: memory.search_tokens (tsvector + GIN) and release 4 of the L2 functions.

Revision ID: 0015_hybrid
Revises: 0014_sweep_protect
Create Date: 2026-12-03

The column is added empty (NULL = not tokenized yet): the tokens are made in Python
(amrita_memory_pg/domain/tokens.py), so the backfill is not SQL this migration could
run. It is the resumable maintenance step amrita_memory_pg/maintenance/tokens.py, run
when a store opens (bootstrap) and by ``amrita-memory tokens backfill``; until it has
run, old rows are found by vector similarity only. The functions of release 3 stay
(additive): older code keeps working on an upgraded schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0015_hybrid"
down_revision: str | None = "0014_sweep_protect"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE amrita_memory.memory ADD COLUMN search_tokens tsvector NULL")
    op.execute(
        "COMMENT ON COLUMN amrita_memory.memory.search_tokens IS "
        "'keyword-search tokens made in Python (domain/tokens.py); NULL = not tokenized yet'"
    )
    op.execute(
        "CREATE INDEX ix_memory_search_tokens ON amrita_memory.memory USING gin (search_tokens)"
    )
    # The backfill's work list: empty (and free) once every row has its tokens.
    op.execute(
        "CREATE INDEX ix_memory_id_untokenized ON amrita_memory.memory (id) "
        "WHERE search_tokens IS NULL"
    )
    run_sql_file("functions/memory_v4.sql")


def downgrade() -> None:
    run_sql_file("functions/memory_v4.down.sql")
    op.execute("DROP INDEX IF EXISTS amrita_memory.ix_memory_id_untokenized")
    op.execute("DROP INDEX IF EXISTS amrita_memory.ix_memory_search_tokens")
    op.execute("ALTER TABLE amrita_memory.memory DROP COLUMN IF EXISTS search_tokens")
