"""memory_block_v3: the block's candidates read per partition, through a block index where built

Revision ID: 0060_block_candidates
Revises: 0059_lineage

block_candidates_v1 reads each partition's first p_limit memories, then they are merged:
the same rows as memory_block_v2. Global and the large partitions are read through their
own block index (ix_memory_top_*, built at run time by maintain_ann_indexes when
[injection] is enabled) by a statement planned for the partition, since a generic plan
cannot see a partial index. Why: v2 ordered every row of global and the chat's group every
turn (29 ms at a million memories).

0060_block_candidates.sql brings the functions, views and triggers of the previous head to
the live files' (sql/functions); 0060_block_candidates.down.sql brings them back. Both are
frozen with this migration (written by tests/support/sql_migration.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0060_block_candidates"
down_revision: str | None = "0059_lineage"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HERE = Path(__file__)


def upgrade() -> None:
    # table changes (op.*) go first: the definitions below may use them
    run_sql_file(HERE.with_suffix(".sql"))


#: The block indexes maintenance built: only block_candidates_v1 reads them, and any index
#: over importance makes every sweep demotion non-HOT, so the release below (which neither
#: reads nor drops them) must not keep them.
DROP_BLOCK_INDEXES = """
DO $$
DECLARE
    v_name text;
BEGIN
    FOR v_name IN
        SELECT c.relname FROM pg_class c
         WHERE c.relnamespace = 'amrita_memory'::regnamespace AND c.relkind = 'i'
           AND left(c.relname, 14) = 'ix_memory_top_'
    LOOP
        EXECUTE format('DROP INDEX amrita_memory.%I', v_name);
    END LOOP;
END
$$;
"""


def downgrade() -> None:
    run_sql_file(HERE.with_suffix(".down.sql"))
    op.execute(DROP_BLOCK_INDEXES)
