"""A keyword (GIN) index per large partition instead of one over the whole table (issue 24).

Revision ID: 0049_keyword_index_per_partition
Revises: 0048_keyword_intersect
Create Date: 2026-12-04

Why. Only a partition with its own HNSW index (amrita_memory.ann_index) searches by GIN:
search_memories_v6 takes its keyword candidates with `search_tokens @@ q` in that one
partition; every other partition is scored row by row without any index. Yet the GIN
index over the whole table was maintained by every write of every partition, and on real
Chinese memories (single characters are tokens) a query's lexemes match ~40% of the
whole table: on 110k memories with one 10k-row partition (bench_l2.py --cjk-chars 33
--big-partition 10000 loaded), the candidate statement walked 40,866 index entries to
keep the 3,657 of its partition, 22.4 ms; over an index of that partition alone, 8.1 ms.
Keyword reads of that partition: 24.7 -> 12.6-14.2 ms p50, hybrid 32 -> 19-21 ms.

What. Each partition with an HNSW index gets `ix_memory_kw_<md5(partition)[:24]>`, a
GIN index over its rows only (`WHERE partition_key = '<partition>'`: search_memories_v6
runs its statement with the partition as a constant, so the planner proves the
predicate); amrita_memory_pg/maintenance/ann.py builds and drops them with the HNSW
indexes (CONCURRENTLY). This migration builds them for the partitions that have an HNSW
index now (not concurrently: it runs in the upgrade's transaction) and drops the global
ix_memory_search_tokens. The downgrade puts the global index back and drops these.
A previous release's process (rolling upgrade) searches the same way; a partition its
maintenance gives a new HNSW index has no keyword index until this release's
maintenance runs, and is searched without one meanwhile (by its rows, as before 0015).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0049_keyword_index_per_partition"
down_revision: str | None = "0048_keyword_intersect"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The index name of a partition, as maintenance/ann.py keyword_index_name() makes it.
NAME = "'ix_memory_kw_' || left(md5(p), 24)"


def upgrade() -> None:
    op.execute(
        f"""
        DO $$
        DECLARE p text;
        BEGIN
            FOR p IN SELECT DISTINCT a.partition_key FROM amrita_memory.ann_index a LOOP
                EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON amrita_memory.memory'
                               ' USING gin (search_tokens) WHERE partition_key = %L',
                               {NAME}, p);
            END LOOP;
        END
        $$
        """
    )
    op.execute("DROP INDEX IF EXISTS amrita_memory.ix_memory_search_tokens")


def downgrade() -> None:
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_memory_search_tokens"
        " ON amrita_memory.memory USING gin (search_tokens)"
    )
    op.execute(
        r"""
        DO $$
        DECLARE n text;
        BEGIN
            FOR n IN SELECT c.relname FROM pg_class c
                       JOIN pg_namespace s ON s.oid = c.relnamespace
                      WHERE s.nspname = 'amrita_memory' AND c.relkind = 'i'
                        AND c.relname LIKE 'ix\_memory\_kw\_%' LOOP
                EXECUTE format('DROP INDEX amrita_memory.%I', n);
            END LOOP;
        END
        $$
        """
    )
