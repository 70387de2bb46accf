"""Keep vectors in the row (issue 24): memory and knowledge rows are toasted only past a
page, and then their text first.

Revision ID: 0046_vectors_inline
Revises: 0045_write_history_plain
Create Date: 2026-12-04

Why. PostgreSQL starts toasting a row at 2 KB (toast_tuple_target 2032), and pgvector's
type is EXTERNAL: the vector, the biggest value, is the first moved out of line. A
384-d vector is 1.5 KB; a 33-character Chinese memory with its search tokens (~550 B of
bigrams) makes a 2.3 KB row, so on real data EVERY memory's vector sat in the TOAST
table and every search fetched it back through the TOAST index, row by row (a 1024-d
vector is out of line whatever the text). The synthetic bench texts (~50 B, ~90 B of
tokens: 1.8 KB rows) stayed under the threshold and never showed it. Measured on 100k
memories / 1,000 partitions of 33 random CJK characters with the product's tokens
(bench/bench_l2.py --cjk-chars 33 loads the same), read p50 interleaved, 3 rounds: vector
1.131 -> 0.787 ms (0.70x), hybrid 1.991 -> 1.427 ms (0.72x), keyword 1.148 -> 1.157 ms.

What. Both tables toast only a row over 8,160 bytes (toast_tuple_target, the largest
value: a row that fits a page stays whole), and their embedding is MAIN: when a row must
be toasted, its EXTENDED values (content, tokens, tags) are compressed and moved out
first, and the vector only if the row still does not fit a page (a 3072-d vector, 12 KB,
is stored out of line as before; nothing is refused). A 1024-d memory is one row of
~4.5 KB. Rows written before this migration keep their out-of-line vectors until they
are rewritten: a re-embed (`amrita-memory reindex`) or an edit of the vector rewrites
them, and `VACUUM FULL amrita_memory.memory` (an exclusive lock, ~8 s per 100k rows here)
rewrites them all (docs/operations.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0046_vectors_inline"
down_revision: str | None = "0045_write_history_plain"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"
TABLES = ("memory", "knowledge")
#: the largest toast_tuple_target PostgreSQL accepts (a page less its header)
WHOLE_PAGE = 8160


def upgrade() -> None:
    for table in TABLES:
        op.execute(f"ALTER TABLE {SCHEMA}.{table} SET (toast_tuple_target = {WHOLE_PAGE})")
        op.execute(f"ALTER TABLE {SCHEMA}.{table} ALTER COLUMN embedding SET STORAGE MAIN")


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"ALTER TABLE {SCHEMA}.{table} ALTER COLUMN embedding SET STORAGE EXTERNAL")
        op.execute(f"ALTER TABLE {SCHEMA}.{table} RESET (toast_tuple_target)")
