"""Where each memory came from: memory.origin; extraction replaces only its own rows.

Revision ID: 0021_origin
Revises: 0020_block_pause
Create Date: 2026-12-04

Issue 27 item 1. Extraction used to replace every ``source = 'auto'`` row of a partition,
and ``auto`` also held the chat model's writes, every imported memory and the L3 loop's
merges. ``origin`` names the maker (the inserting transaction's actor kind, a column
DEFAULT: sql/functions/origin_v1.sql) and extraction now replaces only
``source = 'auto' AND origin = 'extraction'``.

What each EXISTING row becomes, and why (nothing is deleted, no other column changes):

1. A row whose change history (memory_change, kept since 0019_trail) holds its
   ``create`` gets that record's actor kind — the one written record of who made it —
   unless the record is the triggers' fallback ``system`` with no id (the writer did
   not say who it was): such rows go on to the rules below.
2. Else a ``source = 'auto'`` row created at the exact start time of an ``ok``
   extraction run of its partition, with no author and no tags, is ``extraction``: the
   extraction inserts its entries with the run's start as their creation time, no
   author, no tags (services/extraction.py), so this is the run that wrote it.
3. Else ``source = 'user'`` → ``person`` (only people write source = user) and
   ``source = 'system'`` → ``system``.
4. Every other ``auto`` row → ``unknown``: the chat model's writes, imports and L3 rows
   from before the history cannot be told apart. ``unknown`` is never replaced by
   extraction: keeping a row the next extraction may repeat costs one near-duplicate
   (which L3's dedup merges); replacing it could delete a memory nobody can restore.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0021_origin"
down_revision: str | None = "0020_block_pause"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ORIGINS = "('person', 'llm', 'extraction', 'l3', 'import', 'system', 'unknown')"


def upgrade() -> None:
    op.execute("ALTER TABLE amrita_memory.memory ADD COLUMN origin text")
    # 1. the recorded creator
    op.execute(
        """
        UPDATE amrita_memory.memory m
           SET origin = c.actor_kind
          FROM amrita_memory.memory_change c
         WHERE c.partition_key = m.partition_key AND c.memory_id = m.id AND c.op = 'create'
           AND (c.actor_kind <> 'system' OR c.actor_id IS NOT NULL)
        """
    )
    # 2. created by an ok extraction run of its partition (its start = their created_at)
    op.execute(
        """
        UPDATE amrita_memory.memory m
           SET origin = 'extraction'
         WHERE m.origin IS NULL AND m.source = 'auto' AND m.author IS NULL
           AND m.tags = '{}'::text[]
           AND EXISTS (SELECT 1 FROM amrita_memory.extraction_run r
                        WHERE r.partition_key = m.partition_key AND r.status = 'ok'
                          AND r.started_at = m.created_at)
        """
    )
    # 3. and 4.
    op.execute(
        """
        UPDATE amrita_memory.memory
           SET origin = CASE source WHEN 'user' THEN 'person'
                                    WHEN 'system' THEN 'system'
                                    ELSE 'unknown' END
         WHERE origin IS NULL
        """
    )
    run_sql_file("functions/origin_v1.sql")
    op.execute(
        "ALTER TABLE amrita_memory.memory "
        "ALTER COLUMN origin SET DEFAULT amrita_memory.actor_origin_v1(), "
        "ALTER COLUMN origin SET NOT NULL, "
        f"ADD CONSTRAINT ck_memory_origin CHECK (origin IN {ORIGINS})"
    )
    op.execute(
        "COMMENT ON COLUMN amrita_memory.memory.origin IS "
        "'who made it: person | llm | extraction | l3 | import | system | unknown "
        "(before origins were recorded); extraction replaces only its own rows'"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE amrita_memory.memory DROP COLUMN origin")
    run_sql_file("functions/origin_v1.down.sql")
