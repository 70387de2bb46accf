"""Model checks on every vector write, one search filter, catalogue comments, Citus-ready keys.

Revision ID: 0006_model_checks_citus_keys
Revises: 0005_search_v2
Create Date: 2026-12-04

- ``sql/functions/memory_v3.sql``: ``memory_matches_v1`` (the search filter, once),
  ``search_memories_v3`` (+ exact/ANN parts; v2's scores, an AMF03 dimension check),
  ``require_store_model_v1``, ``insert_memory_v2`` and ``update_memory_v1`` (fingerprint
  AMF01 *and* dimension AMF03 checked on every write of a vector).
- ``store_meta.embed_dim`` is filled from the stored vectors where a previous release
  left it NULL (only when they all have one dimension; a mixed store stays NULL and
  ``require_store_model_v1`` decides at the next write). The downgrade keeps the value:
  it is true of the data, and the older functions never read it.
- ``sql/functions/comments_v1.sql``: ``COMMENT ON`` every function and view released
  before this revision.
- Primary keys lead with the partition key (Citus's distribution column, docs/scaling.md):
  ``memory`` (id) → (partition_key, id) plus a plain index on id, which the id-ordered
  keyset walks (sweep, re-embed, chroma rebuild) need; ``chat_log`` (id) →
  (session_key, id), which replaces ``ix_chat_log_session_key_id``. Rebuilding a primary
  key takes an ACCESS EXCLUSIVE lock for the length of the index build (about a second
  per 100k memories); run the upgrade while the bot is stopped, as for any release.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0006_model_checks_citus_keys"
down_revision: str | None = "0005_search_v2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.drop_constraint("pk_memory", "memory", schema=SCHEMA, type_="primary")
    op.create_primary_key("pk_memory", "memory", ["partition_key", "id"], schema=SCHEMA)
    op.create_index("ix_memory_id", "memory", ["id"], unique=False, schema=SCHEMA)

    op.drop_constraint("pk_chat_log", "chat_log", schema=SCHEMA, type_="primary")
    op.create_primary_key("pk_chat_log", "chat_log", ["session_key", "id"], schema=SCHEMA)
    op.drop_index("ix_chat_log_session_key_id", table_name="chat_log", schema=SCHEMA)

    # A dimension is recorded only when every stored vector agrees on it.
    op.execute(
        f"""
        UPDATE {SCHEMA}.store_meta s
           SET embed_dim = d.dim
          FROM (SELECT min(x.dim) AS dim, count(DISTINCT x.dim) AS dims
                  FROM (SELECT vector_dims(m.embedding) AS dim FROM {SCHEMA}.memory m
                        UNION ALL
                        SELECT vector_dims(k.embedding) FROM {SCHEMA}.knowledge k) x) d
         WHERE s.id = 1 AND s.embed_dim IS NULL AND d.dims = 1
        """
    )

    run_sql_file("functions/memory_v3.sql")
    run_sql_file("functions/comments_v1.sql")


def downgrade() -> None:
    run_sql_file("functions/comments_v1.down.sql")
    run_sql_file("functions/memory_v3.down.sql")

    op.create_index("ix_chat_log_session_key_id", "chat_log", ["session_key", "id"], schema=SCHEMA)
    op.drop_constraint("pk_chat_log", "chat_log", schema=SCHEMA, type_="primary")
    op.create_primary_key("pk_chat_log", "chat_log", ["id"], schema=SCHEMA)

    op.drop_index("ix_memory_id", table_name="memory", schema=SCHEMA)
    op.drop_constraint("pk_memory", "memory", schema=SCHEMA, type_="primary")
    op.create_primary_key("pk_memory", "memory", ["id"], schema=SCHEMA)
