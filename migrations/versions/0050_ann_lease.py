"""The index maintenance runs once at a time in the fleet: the 'ann' lease kind (issue 24).

Revision ID: 0050_ann_lease
Revises: 0049_keyword_index_per_partition
Create Date: 2026-12-04

maintenance/ann.py builds and drops the per-partition HNSW and keyword indexes with CREATE
INDEX CONCURRENTLY. Two runs at once (the CLI's `ann-index` beside a re-embed's rebuild,
or two processes) deadlock: two concurrent builds on one table wait for each other's
transaction. A run now holds the lease ('ann', ''): a second one waits for it. Only the
lease table's CHECK constraint changes; the downgrade removes 'ann' rows (a lease that
was held) first, so the old check holds again.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0050_ann_lease"
down_revision: str | None = "0049_keyword_index_per_partition"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "amrita_memory"
LEASE_KINDS_BEFORE = "kind IN ('l3', 'extraction', 'sweep', 'reembed', 'backup', 'restore')"
LEASE_KINDS = "kind IN ('l3', 'extraction', 'sweep', 'reembed', 'backup', 'restore', 'ann')"


def _recheck(lease: str) -> None:
    # op.f: the name as it is (the naming convention would prefix it again)
    op.drop_constraint(op.f("ck_lease_kind"), "lease", schema=SCHEMA, type_="check")
    op.create_check_constraint(op.f("ck_lease_kind"), "lease", lease, schema=SCHEMA)


def upgrade() -> None:
    _recheck(LEASE_KINDS)


def downgrade() -> None:
    op.execute(f"DELETE FROM {SCHEMA}.lease WHERE kind = 'ann'")
    _recheck(LEASE_KINDS_BEFORE)
