"""Partition-key migration to the current ``uni_id`` format (reference §2.5).

Legacy keys (``user_{qq}``, ``group_{gid}``, bare digits with a scope) become
``QQPlatform_Private_{qq}`` / ``QQPlatform_Group_{gid}``. Idempotent: current keys map
to themselves. Memories and memos are both converted (the reference left memos alone),
in one transaction, and the format version is recorded in ``store_meta``. Unrecognised
keys are reported and left as they are.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from amrita_memory_pg.domain.keys import KEY_FORMAT_VERSION, to_current
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.pg.timeouts import lift_statement_timeout
from amrita_memory_pg.storage.queries import query

log = logging.getLogger(__name__)


@dataclass(slots=True)
class KeyMigrationReport:
    #: old key → new key, for every key that changes
    mapping: dict[str, str] = field(default_factory=dict)
    changed_rows: int = 0
    memos_changed: int = 0
    #: memos whose new key already had a memo (the current-format memo is kept)
    memo_conflicts: list[str] = field(default_factory=list)
    #: profiles moved to their current key (their history moves with them)
    profiles_changed: int = 0
    #: profiles whose new key already had a profile or history (both are kept as they are)
    profile_conflicts: list[str] = field(default_factory=list)
    unrecognised: list[str] = field(default_factory=list)
    version_before: int | None = None
    dry_run: bool = False


async def migrate_keys(
    pool: asyncpg.Pool, *, dry_run: bool = False, default_platform: str = "qq"
) -> KeyMigrationReport:
    """Convert legacy partition keys; with ``dry_run`` only count what would change."""
    report = KeyMigrationReport(dry_run=dry_run)
    async with pool.acquire() as conn, conn.transaction():
        await lift_statement_timeout(conn)  # one transaction over every legacy row
        # Serialise with other migrations of keys (bot start-up and CLI at once).
        await conn.execute(query("lock_key_migration"))
        report.version_before = (await store_meta.read(conn)).key_format_version
        pairs = await conn.fetch(query("memory_partition_keys"))
        updates: list[tuple[str, str, str, int]] = []
        for row in pairs:
            old = row["partition_key"]
            new = to_current(old, row["scope"], default_platform)
            if new is None:
                if old not in report.unrecognised:
                    report.unrecognised.append(old)
                continue
            if new != old:
                report.mapping[old] = new
                updates.append((old, row["scope"], new, row["n"]))
        memo_keys = [r["partition_key"] for r in await conn.fetch(query("memo_partition_keys"))]
        existing = set(memo_keys)
        memo_moves: list[tuple[str, str]] = []
        for old in memo_keys:
            # A memo has no scope; "user_1"/"group_1" say it, bare digits cannot.
            new = to_current(old, None, default_platform)
            if new is None:
                if old not in report.unrecognised:
                    report.unrecognised.append(old)
            elif new != old:
                if new in existing:
                    report.memo_conflicts.append(old)
                else:
                    memo_moves.append((old, new))
                    existing.add(new)
                report.mapping.setdefault(old, new)
        profile_moves = await _profile_moves(conn, report, default_platform)
        report.changed_rows = sum(n for *_, n in updates)
        report.memos_changed = len(memo_moves)
        report.profiles_changed = len(profile_moves)
        if dry_run:
            return report
        for old, scope, new, _n in updates:
            await conn.execute(query("rename_memory_partition"), old, scope, new)
        for old, new in memo_moves:
            await conn.execute(query("rename_memo_partition"), old, new)
        for old, new in profile_moves:
            await conn.execute(query("rename_profile_partition"), old, new)
        await store_meta.write_key_format_version(conn, KEY_FORMAT_VERSION)
    for key in report.unrecognised:
        log.warning("partition key %r is not recognised; left as it is", key)
    return report


async def _profile_moves(
    conn: Any, report: KeyMigrationReport, default_platform: str
) -> list[tuple[str, str]]:
    """(old, new) keys of the profiles to move. A profile is personal, so a bare number
    is a user; a new key that already has a profile or history rows is a conflict, and
    both stay where they are."""
    keys = [r["partition_key"] for r in await conn.fetch(query("profile_partition_keys"))]
    taken = set(keys) | {
        r["partition_key"] for r in await conn.fetch(query("profile_history_partition_keys"))
    }
    moves: list[tuple[str, str]] = []
    for old in keys:
        new = to_current(old, "user", default_platform)
        if new is None:
            if old not in report.unrecognised:
                report.unrecognised.append(old)
        elif new != old:
            if new in taken:
                report.profile_conflicts.append(old)
            else:
                moves.append((old, new))
                taken.add(new)
            report.mapping.setdefault(old, new)
    return moves


async def key_format_version(pool: asyncpg.Pool) -> int | None:
    return (await store_meta.read(pool)).key_format_version
