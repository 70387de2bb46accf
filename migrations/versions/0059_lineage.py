"""Lineage of derived rows, forgetting that reaches them, an erasure ledger.

Revision ID: 0059_lineage
Revises: 0058_comments_name_the_present

Every row the product derives (an L3 merge or rewrite, a profile line or summary, a distilled
knowledge entry, a memo sentence, an extracted memory) records what it was made from in its
own transaction; a delete, a forget or an erasure walks it (docs/forgetting.md). Three tables
(``lineage``, ``rederive_task``, ``erasure_ledger``), the functions of
sql/functions/lineage.sql, and the profile history may name ``system`` as its actor (a line
withheld by a delete). Additive: the previous release neither reads nor writes the new tables.

0059_lineage.sql brings the functions, views and triggers of the previous head to the live
files' (sql/functions), in the order they call each other (a SQL-language function is
checked when it is created); 0059_lineage.down.sql brings them back. Both are frozen with
this migration (written by tests/support/sql_migration.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "0059_lineage"
down_revision: str | None = "0058_comments_name_the_present"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HERE = Path(__file__)
SCHEMA = "amrita_memory"
DERIVED_KINDS = "('memory', 'knowledge', 'profile_line', 'profile_summary', 'memo_sentence')"
SOURCE_KINDS = "('memory', 'chat_line')"
ACTOR_KINDS = "('person', 'llm', 'extraction', 'l3', 'import', 'system')"


def upgrade() -> None:
    # table changes (op.*) go first: the definitions below may use them
    op.create_table(
        "lineage",
        sa.Column(
            "derived_kind",
            sa.Text(),
            nullable=False,
            comment="memory | knowledge | profile_line | profile_summary | memo_sentence",
        ),
        sa.Column(
            "derived_key", sa.Text(), nullable=False, comment="its partition ('' = knowledge)"
        ),
        sa.Column(
            "derived_id",
            sa.Text(),
            nullable=False,
            comment="memory id | kid | text_id_v1 of the line, summary or sentence",
        ),
        sa.Column("source_kind", sa.Text(), nullable=False, comment="memory | chat_line"),
        sa.Column(
            "source_key", sa.Text(), nullable=False, comment="its partition / chat session key"
        ),
        sa.Column("source_id", sa.Text(), nullable=False, comment="memory id | chat_log id"),
        sa.Column("made_by", sa.Text(), nullable=False, comment="the writer's actor kind"),
        sa.Column("cycle_id", sa.BigInteger(), nullable=True, comment="the L3 cycle that made it"),
        sa.Column("made_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            f"derived_kind IN {DERIVED_KINDS}", name=op.f("ck_lineage_derived_kind")
        ),
        sa.CheckConstraint(f"source_kind IN {SOURCE_KINDS}", name=op.f("ck_lineage_source_kind")),
        sa.CheckConstraint(f"made_by IN {ACTOR_KINDS}", name=op.f("ck_lineage_made_by")),
        sa.PrimaryKeyConstraint(
            "derived_key",
            "derived_kind",
            "derived_id",
            "source_kind",
            "source_key",
            "source_id",
            name=op.f("pk_lineage"),
        ),
        schema=SCHEMA,
        comment="What each derived row was made from (memories, chat lines); walked both ways "
        "by lineage_made_from_v1 / lineage_used_by_v1",
    )
    op.create_index(
        op.f("ix_lineage_source_key_source_kind_source_id"),
        "lineage",
        ["source_key", "source_kind", "source_id"],
        unique=False,
        schema=SCHEMA,
    )
    op.create_table(
        "rederive_task",
        sa.Column(
            "partition_key",
            sa.Text(),
            nullable=False,
            comment="the partition whose L3 cycle re-derives it",
        ),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column(
            "kind",
            sa.Text(),
            nullable=False,
            comment="memory | knowledge | profile_line | profile_summary | memo_sentence",
        ),
        sa.Column("row_key", sa.Text(), nullable=False, comment="the withheld row's partition"),
        sa.Column("row_id", sa.Text(), nullable=False, comment="its id as lineage names it"),
        sa.Column(
            "held",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="the row as it was (NULL after an erasure: no content is kept)",
        ),
        sa.Column(
            "sources",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            server_default=sa.text("'[]'::jsonb"),
            comment="the sources left: [{kind, key, id}]",
        ),
        sa.Column(
            "about",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            server_default=sa.text("'[]'::jsonb"),
            comment="what to leave out or take in: [{was, now}]",
        ),
        sa.Column("reason", sa.Text(), nullable=False, comment="delete | forget | erase | change"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_by_cycle", sa.BigInteger(), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(f"kind IN {DERIVED_KINDS}", name=op.f("ck_rederive_task_kind")),
        sa.CheckConstraint(
            "reason IN ('delete', 'forget', 'erase', 'change')",
            name=op.f("ck_rederive_task_reason"),
        ),
        sa.CheckConstraint(
            "(claimed_by_cycle IS NULL) = (claimed_at IS NULL)", name=op.f("ck_rederive_task_claim")
        ),
        sa.PrimaryKeyConstraint("partition_key", "id", name=op.f("pk_rederive_task")),
        schema=SCHEMA,
        comment="Rows a forget or change withheld, waiting for the partition's next L3 cycle "
        "to derive them again (subconscious_rederive)",
    )
    op.create_table(
        "erasure_ledger",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False, comment="forget | erase"),
        sa.Column(
            "subject",
            sa.Text(),
            nullable=False,
            comment="sha256 of the partition key (erasure_subject_v1); the key is not kept",
        ),
        sa.Column(
            "memory_ids",
            postgresql.ARRAY(sa.Text()),
            nullable=False,
            server_default=sa.text("'{}'::text[]"),
            comment="forget: the memories removed (random ids, no content)",
        ),
        sa.Column(
            "chat_line_ids",
            postgresql.ARRAY(sa.BigInteger()),
            nullable=False,
            server_default=sa.text("'{}'::bigint[]"),
            comment="forget: the chat lines removed",
        ),
        sa.Column(
            "requested_by",
            sa.Text(),
            nullable=False,
            comment="the surface and operator that asked (cli:<os user>, web:<login>, chat)",
        ),
        sa.Column(
            "counts",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            server_default=sa.text("'{}'::jsonb"),
            comment="the receipt: rows removed per table",
        ),
        sa.CheckConstraint("kind IN ('forget', 'erase')", name=op.f("ck_erasure_ledger_kind")),
        sa.CheckConstraint("subject ~ '^[0-9a-f]{64}$'", name=op.f("ck_erasure_ledger_subject")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_erasure_ledger")),
        schema=SCHEMA,
        comment="What was forgotten or erased and when, without content; every restore "
        "applies it (erasure_ledger_apply_v1)",
    )
    op.drop_constraint(
        op.f("ck_profile_history_actor_kind"), "profile_history", schema=SCHEMA, type_="check"
    )
    op.create_check_constraint(
        op.f("ck_profile_history_actor_kind"),
        "profile_history",
        "actor_kind IN ('cli', 'chat', 'loop', 'system')",
        schema=SCHEMA,
    )
    run_sql_file(HERE.with_suffix(".sql"))


def downgrade() -> None:
    run_sql_file(HERE.with_suffix(".down.sql"))
    # then the table changes undone (op.*)
    op.execute(
        f"UPDATE {SCHEMA}.profile_history SET actor_kind = 'cli' WHERE actor_kind = 'system'"
    )
    op.drop_constraint(
        op.f("ck_profile_history_actor_kind"), "profile_history", schema=SCHEMA, type_="check"
    )
    op.create_check_constraint(
        op.f("ck_profile_history_actor_kind"),
        "profile_history",
        "actor_kind IN ('cli', 'chat', 'loop')",
        schema=SCHEMA,
    )
    op.drop_table("erasure_ledger", schema=SCHEMA)
    op.drop_table("rederive_task", schema=SCHEMA)
    op.drop_index(
        op.f("ix_lineage_source_key_source_kind_source_id"), table_name="lineage", schema=SCHEMA
    )
    op.drop_table("lineage", schema=SCHEMA)
