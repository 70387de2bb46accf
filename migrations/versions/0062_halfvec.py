"""Stored embeddings as halfvec; the HNSW indexes and search functions with them

Revision ID: 0062_halfvec
Revises: 0061_partition_count

memory, knowledge and the re-embed's staging hold half-precision vectors (ALTER COLUMN
... TYPE halfvec, which rewrites the tables; STORAGE MAIN set again, since a type change
resets it to the type's EXTERNAL). The per-partition HNSW indexes that maintenance built
(listed in ann_index) are dropped first and built again, same name and graph settings, as
halfvec_l2_ops over (embedding::halfvec(n)), the expression search_vector_ann_v5 now orders
by. The search functions compute halfvec distances under their own names: 0.14.1's bodies
(vector_l2_squared_distance of the column) cannot run on a halfvec column, and 0.14.1 calls
them during a rolling upgrade, so they are replaced in place with the same results (the
query cast to halfvec once per statement, not per row). The weighted fusion (and
knowledge_search_v2's) counts a similarity spread under 1e-3 as no signal, as it did one
under 1e-6 with float32: the rounding of a half-precision vector, its length included,
moves a similarity by ~1e-4.
The downgrade turns every column back to vector (each value as stored, half precision) and
the indexes back to vector_l2_ops before the old bodies are restored.
Why: half the bytes of a vector (a 384-d row 2,221 -> 1,453 B) at the same LoCoMo hit@5
(vector 0.494 -> 0.493, hybrid 0.638 -> 0.638).

0062_halfvec.sql brings the functions, views and triggers of the previous head to the live
files' (sql/functions); 0062_halfvec.down.sql brings them back. Both are frozen with this
migration (written by tests/support/sql_migration.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0062_halfvec"
down_revision: str | None = "0061_partition_count"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HERE = Path(__file__)


def convert_embeddings(type_name: str, opclass: str, max_dim: int) -> str:
    """Every embedding column to ``type_name``, the HNSW indexes of ann_index rebuilt as
    ``opclass`` over ``(embedding::type_name(n))`` (same name, same m / ef_construction).
    The indexes go first: their expression casts the column, and an index of the old
    kind would be rebuilt by the ALTER only to be useless to the search functions. One of
    more than ``max_dim`` dimensions (HNSW's limit for the type: a halfvec index of 2,001 to
    4,000 on the way down) is dropped and forgotten: that partition's search goes exact."""
    return f"""
DO $$
DECLARE
    r record;
BEGIN
    CREATE TEMPORARY TABLE ann_rebuild ON COMMIT DROP AS
        SELECT a.index_name, a.partition_key, a.dim,
               array_to_string(c.reloptions, ', ') AS options
          FROM amrita_memory.ann_index a
          JOIN pg_class c ON c.relname = a.index_name
                         AND c.relnamespace = 'amrita_memory'::regnamespace;
    FOR r IN SELECT * FROM ann_rebuild LOOP
        EXECUTE format('DROP INDEX amrita_memory.%I', r.index_name);
    END LOOP;
    ALTER TABLE amrita_memory.memory
        ALTER COLUMN embedding TYPE {type_name} USING embedding::{type_name},
        ALTER COLUMN embedding SET STORAGE MAIN;
    ALTER TABLE amrita_memory.knowledge
        ALTER COLUMN embedding TYPE {type_name} USING embedding::{type_name},
        ALTER COLUMN embedding SET STORAGE MAIN;
    ALTER TABLE amrita_memory.reembed_staging
        ALTER COLUMN embedding TYPE {type_name} USING embedding::{type_name};
    DELETE FROM amrita_memory.ann_index a
     WHERE a.index_name IN (SELECT b.index_name FROM ann_rebuild b WHERE b.dim > {max_dim});
    FOR r IN SELECT * FROM ann_rebuild WHERE dim <= {max_dim} LOOP
        EXECUTE format(
            'CREATE INDEX %I ON amrita_memory.memory USING hnsw '
            '((embedding::{type_name}(%s)) {opclass})%s '
            'WHERE partition_key = %L AND vector_dims(embedding) = %s',
            r.index_name, r.dim,
            CASE WHEN r.options IS NULL THEN '' ELSE ' WITH (' || r.options || ')' END,
            r.partition_key, r.dim);
    END LOOP;
END
$$;
"""


def upgrade() -> None:
    # table changes (op.*) go first: the definitions below may use them (a SQL function's
    # body is checked against the column's type when it is created)
    op.execute(convert_embeddings("halfvec", "halfvec_l2_ops", 4000))
    run_sql_file(HERE.with_suffix(".sql"))


def downgrade() -> None:
    # the columns first: the restored bodies call vector_l2_squared_distance on them
    op.execute(convert_embeddings("vector", "vector_l2_ops", 2000))
    run_sql_file(HERE.with_suffix(".down.sql"))
