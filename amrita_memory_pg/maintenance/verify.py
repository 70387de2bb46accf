"""``backup verify``: restore a backup into a throwaway database and compare every table.

It also applies the store's erasure ledger to the restored copy, as every restore does,
and reports what a restore of this backup would remove again (memories forgotten and
partitions erased after it was taken).

A version-2 backup's header holds, per table, the rows and a content digest taken in the
backup's own snapshot (table_digest_v1). Verify loads the JSONL — and, separately, replays
the ``.dump`` — into a database created for the purpose on the same server (needs the
CREATEDB privilege), computes the same digests there and drops the database again,
whatever happens. A truncated, edited or half-written file shows up as a table whose rows
or digest differ, never as a silent pass.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from amrita_memory_pg.domain.errors import AmritaMemoryError, BackupError
from amrita_memory_pg.maintenance.backup import BackupInfo, find_backup, read_header, table_digests
from amrita_memory_pg.maintenance.restore import (
    dump_script,
    load_jsonl,
    replay_dump,
    validate_jsonl,
)
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage.lineage import apply_ledger, ledger_rows, merge_ledger
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import create_pool
from amrita_memory_pg.storage.pg.libpq import with_database
from amrita_memory_pg.storage.pg.timeouts import lift_statement_timeout
from amrita_memory_pg.storage.queries import query

log = logging.getLogger(__name__)

#: throwaway databases are named this + 8 hex digits
SCRATCH_PREFIX = "amrita_memory_verify_"


@dataclass(slots=True)
class VerifyReport:
    """Per file (``jsonl``, ``dump``): per table, (rows, digest) found; and what differs."""

    backup: BackupInfo
    expected: dict[str, tuple[int, str]] = field(default_factory=dict)
    found: dict[str, dict[str, tuple[int, str]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: the store's erasure ledger applied to the restored copy: ledger id → (kind, rows
    #: that a restore of this backup removes again); empty: it holds nothing forgotten
    ledger: dict[int, tuple[str, int]] = field(default_factory=dict)
    #: entries in the store's ledger (how many the copy was checked against)
    ledger_entries: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


@contextlib.asynccontextmanager
async def scratch_database(store: Store) -> AsyncIterator[str]:
    """A new, migrated database on the store's server; dropped on the way out."""
    name = SCRATCH_PREFIX + secrets.token_hex(4)
    async with store.pool.acquire() as conn:
        try:
            await conn.execute(await conn.fetchval(query("create_scratch_database_ddl"), name))
        except asyncpg.PostgresError as exc:
            raise BackupError(
                "backup verify restores into a throwaway database and could not create one "
                f"(the database user needs CREATEDB): {exc}"
            ) from exc
    try:
        dsn = with_database(store.dsn, name)
        await migrate.upgrade(dsn)
        yield dsn
    finally:
        async with store.pool.acquire() as conn:
            await conn.execute(await conn.fetchval(query("drop_scratch_database_ddl"), name))


async def _digests(store: Store, dsn: str) -> dict[str, tuple[int, str]]:
    pool = await create_pool(dsn, store.settings.database)
    try:
        async with pool.acquire() as conn:
            return await table_digests(conn)
    finally:
        await pool.close()


async def _ledger_check(store: Store, dsn: str, report: VerifyReport) -> None:
    """Apply the store's erasure ledger to the restored copy, as a restore would, and
    record what it removes (after the digests were compared: they describe the backup)."""
    async with store.pool.acquire() as conn:
        saved = await ledger_rows(conn)
    report.ledger_entries = len(saved)
    pool = await create_pool(dsn, store.settings.database)
    try:
        async with pool.acquire() as conn, conn.transaction():
            await lift_statement_timeout(conn)
            await merge_ledger(conn, saved)
            report.ledger = await apply_ledger(conn, datetime.now(UTC))
    finally:
        await pool.close()


async def _load_jsonl(store: Store, dsn: str, path: Path, header: dict[str, object]) -> None:
    pool = await create_pool(dsn, store.settings.database)
    try:
        async with pool.acquire() as conn, conn.transaction():
            await lift_statement_timeout(conn)
            await load_jsonl(conn, path, dict(header))
    finally:
        await pool.close()


def _compare(report: VerifyReport, kind: str, found: dict[str, tuple[int, str]]) -> None:
    report.found[kind] = found
    for table, (rows, digest) in report.expected.items():
        got = found.get(table)
        if got is None:
            report.problems.append(f"{kind}: table {table} is missing after the restore")
        elif got[0] != rows:
            report.problems.append(f"{kind}: {table} has {got[0]} rows, the backup took {rows}")
        elif got[1] != digest:
            report.problems.append(f"{kind}: {table} differs in content from what was backed up")


async def verify_backup(store: Store, name: str) -> VerifyReport:
    """Restore backup ``name`` (both files) into throwaway databases and compare every
    table with the rows and digests its header recorded."""
    info = find_backup(store.backups_dir, name)
    header = read_header(info.jsonl_path)
    digests = header.get("digests") or {}
    counts = header.get("counts") or {}
    if not digests:
        raise BackupError(
            f"{info.stem} was made by an older version (format {header.get('version')}): "
            "it records no checksums to verify against; take a new backup"
        )
    report = VerifyReport(
        info, expected={t: (int(counts.get(t, -1)), str(d)) for t, d in digests.items()}
    )
    try:
        validate_jsonl(info.jsonl_path, header)
    except BackupError as exc:
        report.problems.append(f"jsonl: {exc}")
    else:
        try:
            async with scratch_database(store) as dsn:
                await _load_jsonl(store, dsn, info.jsonl_path, header)
                _compare(report, "jsonl", await _digests(store, dsn))
                await _ledger_check(store, dsn, report)
        except (AmritaMemoryError, asyncpg.PostgresError) as exc:
            if isinstance(exc, BackupError) and "CREATEDB" in str(exc):
                raise
            report.problems.append(f"jsonl: the restore failed: {exc}")
    if not info.dump_path.is_file():
        report.problems.append(f"dump: {info.dump_path.name} is missing")
        return report
    try:
        async with scratch_database(store) as dsn:
            with tempfile.TemporaryDirectory() as tmp:
                await replay_dump(await dump_script(info.dump_path, Path(tmp)), dsn)
            _compare(report, "dump", await _digests(store, dsn))
    except (AmritaMemoryError, asyncpg.PostgresError) as exc:
        report.problems.append(f"dump: the restore failed: {exc}")
    return report
