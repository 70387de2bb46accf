"""A restore from the admin page runs as a job of the fleet (issue 26 item 7).

Revision ID: 0035_page_export
Revises: 0027_pause_all
Create Date: 2026-12-04

The job and lease tables name the kinds of work they hold; a restore (started from the
backups page, superuser, confirmed) is one more: one at a time across the fleet, with
progress, like a backup. Only the two CHECK constraints change. Downgrade removes the
restore rows (finished jobs, an expired lease) first, so the old check holds again.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0035_page_export"
down_revision: str | None = "0027_pause_all"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"
JOB_KINDS_BEFORE = "kind IN ('backup', 'sweep', 'reembed')"
JOB_KINDS = "kind IN ('backup', 'sweep', 'reembed', 'restore')"
LEASE_KINDS_BEFORE = "kind IN ('l3', 'extraction', 'sweep', 'reembed', 'backup')"
LEASE_KINDS = "kind IN ('l3', 'extraction', 'sweep', 'reembed', 'backup', 'restore')"


def _recheck(job: str, lease: str) -> None:
    # op.f: the names as they are (the naming convention would prefix them again)
    op.drop_constraint(op.f("ck_job_kind"), "job", schema=SCHEMA, type_="check")
    op.create_check_constraint(op.f("ck_job_kind"), "job", job, schema=SCHEMA)
    op.drop_constraint(op.f("ck_lease_kind"), "lease", schema=SCHEMA, type_="check")
    op.create_check_constraint(op.f("ck_lease_kind"), "lease", lease, schema=SCHEMA)


def upgrade() -> None:
    _recheck(JOB_KINDS, LEASE_KINDS)


def downgrade() -> None:
    op.execute(f"DELETE FROM {SCHEMA}.job WHERE kind = 'restore'")
    op.execute(f"DELETE FROM {SCHEMA}.lease WHERE kind = 'restore'")
    _recheck(JOB_KINDS_BEFORE, LEASE_KINDS_BEFORE)
