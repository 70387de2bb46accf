"""Proactive messages are sent when the loop decides; a failed send is kept and retried.

Revision ID: 0029_dropin
Revises: 0023_backup_all
Create Date: 2026-12-04

Issue 25 item 3. ``pending_message`` rows used to wait for the target's next private
message. Now the integration sends a row as soon as the loop queues it; ``delivered_at``
is still set once, by the send that claimed the row, and cleared again when that send
failed, so the row waits for a retry. ``attempts`` counts the sends tried and
``last_error`` says why the last one failed. Existing rows: 0 attempts, no error.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029_dropin"
down_revision: str | None = "0023_backup_all"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"


def upgrade() -> None:
    op.add_column(
        "pending_message",
        sa.Column(
            "attempts",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="sends tried (a failed one clears delivered_at: the row waits for a retry)",
        ),
        schema=SCHEMA,
    )
    op.add_column(
        "pending_message",
        sa.Column("last_error", sa.Text(), nullable=True, comment="why the last send failed"),
        schema=SCHEMA,
    )


def downgrade() -> None:
    op.drop_column("pending_message", "last_error", schema=SCHEMA)
    op.drop_column("pending_message", "attempts", schema=SCHEMA)
