"""Restore: a backup (ours or the reference plugin's) back into the store.

A safety backup of the current store is always taken first; an empty backup never wipes
a non-empty store unless forced; every file is validated completely before anything is
written, and the write is one transaction. A backup made under another model is
restored verbatim and then re-embedded through the one model-change sequence.

Every table the backup carries comes back as it was, the change history included: the
history rows the restore's own deletes and inserts make (the trail trigger records them
as ``system``) are removed in the same transaction before the backup's history is
copied in. A version-1 backup (six kinds) leaves the tables it does not carry alone.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from amrita_memory_pg.domain.decay import parse_created_at
from amrita_memory_pg.domain.errors import BackupError
from amrita_memory_pg.domain.legacy import LegacyMemory, convert_memory
from amrita_memory_pg.domain.records import origin_before_recorded
from amrita_memory_pg.domain.validation import not_utf8
from amrita_memory_pg.maintenance.backup import (
    ARRAY_COLUMNS,
    EXPORT_COLUMNS,
    GENERIC_TABLES,
    GRANT_COLUMNS,
    TIMESTAMP_COLUMNS,
    BackupInfo,
    create_backup,
    decode_vector,
    newest_backup_ledger,
    pg_tool,
    read_header,
    rotate,
    run_tool,
    table_digests,
)
from amrita_memory_pg.maintenance.keys import migrate_keys
from amrita_memory_pg.maintenance.legacy_import import ImportReport, merge_memories
from amrita_memory_pg.maintenance.reembed import change_model
from amrita_memory_pg.maintenance.tokens import backfill_tokens
from amrita_memory_pg.services.leases import LeaseKind, Leases
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.lineage import apply_ledger, ledger_rows, merge_ledger
from amrita_memory_pg.storage.memories import count_all
from amrita_memory_pg.storage.pg.timeouts import lift_statement_timeout
from amrita_memory_pg.storage.queries import query

log = logging.getLogger(__name__)

#: called as (phase, rows done, rows total) while a restore runs (the CLI's bars):
#: ``validate`` (a JSONL's lines read), ``load`` (its rows copied in), ``replay`` (psql
#: replaying a dump: no counts), ``tokens`` (the search tokens made again)
RestoreProgress = Callable[[str, int, int], None]
#: rows between two progress calls of the validation and the load
PROGRESS_EVERY = 1000


@dataclass(slots=True)
class RestoreReport:
    source: Path
    kind: str
    counts: dict[str, int] = field(default_factory=dict)
    reembedded: int = 0
    safety_backup: BackupInfo | None = None
    keys_migrated: int = 0
    #: reference-plugin backups are merged: rows added, and rows already in the store
    merged: int = 0
    kept_existing: int = 0
    #: reference-plugin backups: partition → memories that did not fit under the cap
    overflow: dict[str, int] = field(default_factory=dict)
    #: reference-plugin backups: entries without a recognisable key or text
    skipped: int = 0
    #: the erasure ledger applied after the load: ledger id → (kind, rows removed again)
    ledger: dict[int, tuple[str, int]] = field(default_factory=dict)


def _iter_jsonl(path: Path, only: str | None = None) -> Iterator[dict[str, Any]]:
    """The rows of a JSONL backup; with ``only``, lines our writer made for another kind
    (they start with their ``"type"``) are skipped unparsed — a restore reads the file
    once per kind, and validate_jsonl has parsed every line before."""
    other = '{"type": "'
    mine = f'{other}{only}"'
    try:
        yield from _jsonl_rows(path, only, other, mine)
    except UnicodeDecodeError as exc:
        raise BackupError(not_utf8(path.name, exc)) from exc


def _jsonl_rows(path: Path, only: str | None, other: str, mine: str) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        handle.readline()  # header
        for number, line in enumerate(handle, start=2):
            if not line.strip():
                continue
            if only is not None and line.startswith(other) and not line.startswith(mine):
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BackupError(f"{path.name} line {number} is not JSON: {exc.msg}") from exc
            if not isinstance(item, dict) or not (
                item.get("type") in EXPORT_COLUMNS
                or (item.get("type") in GENERIC_TABLES and isinstance(item.get("row"), dict))
            ):
                raise BackupError(f"{path.name} line {number} has no valid type")
            yield item


def _record(item: dict[str, Any], columns: tuple[str, ...]) -> tuple[Any, ...]:
    values: list[Any] = []
    for column in columns:
        if column == "embedding":
            values.append(decode_vector(item["embedding_f32le"]))
        elif column in TIMESTAMP_COLUMNS:
            parsed = parse_created_at(item.get(column))
            if parsed is None:
                which = item.get("id") or item.get("kid") or item.get("partition_key")
                raise BackupError(f"row {which} has no valid {column}")
            values.append(parsed)
        elif column in ARRAY_COLUMNS:
            values.append(list(item.get(column) or []))
        elif column == "origin" and item.get("origin") is None:
            # a backup from before origins were recorded: the rule upgraded rows got
            values.append(origin_before_recorded(item.get("source")))
        else:
            values.append(item.get(column))
    return tuple(values)


async def _replace_all(conn: Any) -> int:
    """Empty the store in the caller's transaction; returns the memories removed."""
    return int(await conn.fetchval(query("clear_store")))


async def restore_backup(
    store: Store, path: Path, *, force: bool = False, progress: RestoreProgress | None = None
) -> RestoreReport:
    """Replace the store with a backup (``.jsonl``, ``.dump`` or the reference's ``.json``).

    A safety backup of the current store is taken first. An empty backup does not wipe
    a non-empty store unless ``force``. A JSONL whose fingerprint differs from the
    configured model is restored verbatim and then re-embedded (online, resumable).
    """
    path = path.expanduser()
    if not path.is_file():
        raise BackupError(f"backup file not found: {path}")
    if path.suffix == ".dump":
        return await _restore_dump(store, path, force=force, progress=progress)
    if path.suffix == ".jsonl":
        return await _restore_jsonl(store, path, force=force, progress=progress)
    if path.suffix == ".json":
        return await _restore_reference(store, path, force=force)
    raise BackupError(
        f"unknown backup type {path.suffix!r}: expected .jsonl, .dump or the reference's .json"
    )


#: the fleet's leases a restore holds: its own (one restore at a time), and
#: those of the work that rewrites or exports the rows it replaces (a backup's rotation
#: could also delete the very file being restored)
RESTORE_LEASES: tuple[LeaseKind, ...] = ("restore", "backup", "reembed", "sweep")


async def restore_held(
    store: Store,
    leases: Leases,
    path: Path,
    *,
    force: bool = False,
    progress: RestoreProgress | None = None,
) -> RestoreReport:
    """:func:`restore_backup` while holding :data:`RESTORE_LEASES`, the one path of the
    CLI's ``backup restore`` and the admin page's restore job: :class:`LeaseHeld` naming
    the holder, before anything is touched, when another process holds one of them."""
    async with AsyncExitStack() as held:
        for kind in RESTORE_LEASES:
            await held.enter_async_context(leases.hold(kind))
        return await restore_backup(store, path, force=force, progress=progress)


async def _guard_empty(store: Store, incoming: int, force: bool) -> None:
    current = await count_all(store.pool)
    if incoming == 0 and current > 0 and not force:
        raise BackupError(
            f"the backup holds no memories; restoring it would wipe the {current} in the store. "
            "Use --force if that is what you want."
        )


async def _safety_backup(store: Store, protect: Path) -> BackupInfo | None:
    """A backup of the current store unless every table a backup carries is empty (an
    audit trail or a change history alone is worth keeping too)."""
    async with store.pool.acquire() as conn:
        tables = await table_digests(conn)
    if not any(rows for rows, _digest in tables.values()):
        return None
    info = await create_backup(store, reason="before-restore", keep=10**6)
    rotate(
        info.directory,
        store.settings.embedding.reembed_backup_keep,
        protect={protect.name.split(".")[0], info.stem},
        keep_scheduled=store.settings.backup.keep_scheduled,
    )
    return info


async def _saved_ledger(store: Store) -> list[dict[str, Any]]:
    """The erasure ledger before a load replaces it: the store's own rows and those of
    the newest backup in the store's folder (a store rebuilt from an older backup after
    its database was lost still knows every forget and erasure a newer backup recorded)."""
    saved: list[dict[str, Any]] = []
    try:
        async with store.pool.acquire() as conn:
            saved.extend(await ledger_rows(conn))
    except asyncpg.UndefinedTableError:
        pass  # a database from before the ledger existed
    saved.extend(newest_backup_ledger(store.backups_dir))
    return saved


async def _reapply_ledger(conn: Any, saved: list[dict[str, Any]], report: RestoreReport) -> None:
    """Put the ledger back over what the load brought and apply it (in the caller's
    transaction): no backup older than a forget or an erasure brings its rows back."""
    await merge_ledger(conn, saved)
    for entry, (kind, removed) in (await apply_ledger(conn, datetime.now(UTC))).items():
        before = report.ledger.get(entry, (kind, 0))[1]
        report.ledger[entry] = (kind, before + removed)


async def _after_restore(
    store: Store,
    report: RestoreReport,
    saved: list[dict[str, Any]] | None = None,
    progress: RestoreProgress | None = None,
) -> RestoreReport:
    # Every restore ends with the ledger (again, for a JSONL: idempotent), before anything
    # else reads the restored rows.
    async with store.pool.acquire() as conn, conn.transaction():
        await lift_statement_timeout(conn)
        await _reapply_ledger(conn, saved or [], report)
    keys = await migrate_keys(store.pool)
    report.keys_migrated = keys.changed_rows
    # Search tokens are never read from a backup: recomputed from the restored texts.
    await backfill_tokens(
        store.pool,
        progress=None
        if progress is None
        else (lambda done, total: progress("tokens", done, total)),
    )
    stored = (await store_meta.read(store.pool)).fingerprint
    rows = await count_all(store.pool)
    if rows and stored != store.embedder.fingerprint:
        # the safety backup was taken before the restore: no second one
        result = await change_model(store, backup=False)
        report.reembedded = result.embedded
    rebuild = getattr(store.backend, "rebuild", None)
    if rebuild is not None:
        # an external index (chroma) holds the replaced rows' vectors: refill it
        await rebuild(store.pool)
    async with store.pool.acquire() as conn:
        # every table the backup carried, not only the six kinds of the first format:
        # an operator checks what came back (the audit log, the change history, L3 runs…)
        report.counts = {table: rows for table, (rows, _d) in (await table_digests(conn)).items()}
    return report


def carried_kinds(header: dict[str, Any]) -> tuple[str, ...]:
    """The kinds a backup carries, in restore order: its header's counts (version 1: the
    six kinds of EXPORT_COLUMNS, version 2: every backed-up table)."""
    counts = header.get("counts") or {}
    known = (*EXPORT_COLUMNS, *GENERIC_TABLES)
    return tuple(k for k in known if k in counts) if counts else tuple(EXPORT_COLUMNS)


def validate_jsonl(
    path: Path, header: dict[str, Any], progress: Callable[[int, int], None] | None = None
) -> dict[str, int]:
    """Read every line (JSON, a known type) and check the rows per kind against the header;
    ``progress`` hears (lines read, lines the header counts)."""
    counts = {k: int(v) for k, v in (header.get("counts") or {}).items()}
    seen = dict.fromkeys(carried_kinds(header), 0)
    total = sum(counts.values())
    for read, item in enumerate(_iter_jsonl(path), start=1):
        if item["type"] not in seen:
            raise BackupError(f"{path.name} holds {item['type']} rows its header does not count")
        seen[item["type"]] += 1
        if progress is not None and read % PROGRESS_EVERY == 0:
            progress(read, max(total, read))
    if counts and seen != {k: counts.get(k, 0) for k in seen}:
        raise BackupError(f"{path.name} is incomplete: header counts {counts}, found {seen}")
    return seen


#: rows of one generic table sent per import_table_rows call
IMPORT_BATCH = 500


async def _history_by_writer(conn: Any, value: str) -> None:
    """Set (``on``) or clear (``""``) the trail's writer flag for the restore's transaction."""
    await conn.fetchval(query("restore_history_by_writer"), value)


async def load_jsonl(
    conn: Any,
    path: Path,
    header: dict[str, Any],
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Replace what the backup carries with its rows, in the caller's transaction.

    Shared by restore and ``backup verify`` (into a throwaway database). The file is read
    as it is copied in (never whole: a million memories are gigabytes of JSON);
    ``progress`` hears (rows loaded, rows the header counts)."""
    kinds = carried_kinds(header)
    total = sum(int(v) for v in (header.get("counts") or {}).values())
    loaded = 0

    def advance() -> None:
        nonlocal loaded
        loaded += 1
        if progress is not None and loaded % PROGRESS_EVERY == 0:
            progress(loaded, max(total, loaded))

    # The backup's history and access log replace the store's (both tables are emptied
    # and reloaded below): what the trail triggers would write for the memories cleared
    # and copied here is thrown away, so the restore says it keeps the history itself and
    # the row triggers queue nothing for its 2 x N rows (trail.sql; a plpgsql call
    # per row otherwise). A backup without them (version 1) is recorded as before.
    own_history = {"memory_change", "memory_access"} <= set(kinds)
    if own_history:
        await _history_by_writer(conn, "on")
    await _replace_all(conn)
    for table in reversed(GENERIC_TABLES):
        if table in kinds:
            await _clear_table(conn, table)

    async def rows(kind: str, columns: tuple[str, ...]) -> AsyncIterator[tuple[Any, ...]]:
        for item in _iter_jsonl(path, kind):
            if item["type"] == kind:
                advance()
                yield _record(item, columns)

    # the table of each kind is named as the kind
    for kind, columns in EXPORT_COLUMNS.items():
        if kind == "permission_grant":
            continue  # merged below: a restore never revokes a grant made since
        await conn.copy_records_to_table(
            kind, schema_name="amrita_memory", columns=list(columns), records=rows(kind, columns)
        )
    if own_history:
        await _history_by_writer(conn, "")
    grants = [
        _record(i, GRANT_COLUMNS)
        for i in _iter_jsonl(path, "permission_grant")
        if i["type"] == "permission_grant"
    ]
    if grants:
        await conn.executemany(query("merge_restored_grant"), grants)
    if "memory_change" in kinds:
        # the deletes and inserts above were recorded as "system" changes: the backup's
        # history replaces them, so the restore leaves no trace of its own in it
        await _clear_table(conn, "memory_change")
    for table in GENERIC_TABLES:
        if table not in kinds:
            continue
        batch: list[dict[str, Any]] = []
        for item in _iter_jsonl(path, table):
            if item["type"] == table:
                advance()
                batch.append(item["row"])
            if len(batch) >= IMPORT_BATCH:
                await _import_rows(conn, table, batch)
                batch = []
        if batch:
            await _import_rows(conn, table, batch)
        await conn.fetchval(query("reset_table_identity"), table)
    if "sweep_change" in kinds:
        # the sweep's batch rows take their seq from memory_change's sequence: past both
        await conn.fetchval(query("reset_history_sequence"))


async def _clear_table(conn: Any, table: str) -> None:
    """Empty one carried table in the caller's transaction."""
    await conn.fetchval(query("clear_table"), table)


async def _import_rows(conn: Any, table: str, batch: list[dict[str, Any]]) -> None:
    """One batch of a generic table's rows (their canonical JSON) into the table."""
    await conn.fetchval(query("import_table_rows"), table, json.dumps(batch, ensure_ascii=False))


async def _restore_jsonl(
    store: Store, path: Path, *, force: bool, progress: RestoreProgress | None
) -> RestoreReport:
    header = read_header(path)
    # Validate every line before touching anything.
    seen = validate_jsonl(path, header, _phase(progress, "validate"))
    await _guard_empty(store, seen.get("memory", 0), force)
    report = RestoreReport(source=path, kind="jsonl")
    report.safety_backup = await _safety_backup(store, path)
    saved = await _saved_ledger(store)

    async with store.pool.acquire() as conn, conn.transaction():
        await lift_statement_timeout(conn)  # one transaction over the whole backup
        await load_jsonl(conn, path, header, _phase(progress, "load"))
        # in the load's transaction: nobody ever sees a forgotten row come back
        await _reapply_ledger(conn, saved, report)
        await store_meta.write_model(
            conn,
            fingerprint=header.get("fingerprint"),
            protocol=header.get("protocol"),
            model=header.get("model"),
            base_url=header.get("base_url"),
            dim=header.get("dim"),
            keep_dim=False,
            reset_key_format=True,
        )
    return await _after_restore(store, report, saved, progress)


def _phase(progress: RestoreProgress | None, phase: str) -> Callable[[int, int], None] | None:
    """``progress`` for one phase, as a (done, total) callback."""
    if progress is None:
        return None
    return lambda done, total: progress(phase, done, total)


async def _restore_dump(
    store: Store, path: Path, *, force: bool, progress: RestoreProgress | None
) -> RestoreReport:
    """pg_restore into one transaction: drop our schema, recreate it from the dump."""
    from amrita_memory_pg.storage.pg import migrate

    dsn = store.dsn
    with tempfile.TemporaryDirectory() as tmp:
        script = await dump_script(path, Path(tmp))
        # a dump this version cannot bring to head is refused before anything is replaced
        if problem := migrate.unsupported_revision(dump_revision(script)):
            raise BackupError(f"cannot restore {path.name}: {problem}")
        incoming = copy_rows(script, "amrita_memory.memory")
        await _guard_empty(store, incoming, force)
        report = RestoreReport(source=path, kind="dump")
        report.safety_backup = await _safety_backup(store, path)
        saved = await _saved_ledger(store)
        if progress is not None:
            progress("replay", 0, 0)
        await replay_dump(script, dsn)
    # The pool's prepared statements and type caches refer to dropped objects.
    await store.pool.expire_connections()
    await migrate.upgrade(dsn)  # a dump from an older version comes up to head
    return await _after_restore(store, report, saved, progress)


async def dump_script(path: Path, tmp: Path) -> Path:
    """The SQL script of a ``.dump`` (pg_restore --file), written under ``tmp``."""
    script = tmp / "restore.sql"
    await run_tool(
        pg_tool("pg_restore"), f"--file={script}", "--no-owner", "--no-privileges", str(path)
    )
    return script


async def replay_dump(script: Path, dsn: str) -> None:
    """Drop our schema and replay a dump's script, in ONE transaction (psql)."""
    await run_tool(
        pg_tool("psql"),
        "--no-psqlrc",
        "--quiet",
        "--single-transaction",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        query("drop_store_schema"),
        "-f",
        str(script),
        dsn,
    )


#: the header line of a table's data block in a pg_restore script
_COPY_BLOCK = re.compile(r"^COPY (?P<table>\S+) \(.*\) FROM stdin;$")


def dump_revision(script: Path) -> str | None:
    """The schema revision a pg_restore script stamps (its alembic_version row), if any;
    read line by line, as :func:`copy_rows` is."""
    with script.open(encoding="utf-8") as lines:
        for line in lines:
            block = _COPY_BLOCK.match(line.rstrip("\n"))
            if block is not None and block.group("table") == "amrita_memory.alembic_version":
                row = next(lines, "\\.").rstrip("\n")
                return None if row == "\\." else row.split("\t", 1)[0]
    return None


def copy_rows(script: Path, table: str) -> int:
    """Rows in the COPY block of ``table`` in a pg_restore script (one line per row).

    Read line by line: the script of a million memories is gigabytes of text (every vector
    written out), and the restore must keep constant memory."""
    with script.open(encoding="utf-8") as lines:
        for line in lines:
            block = _COPY_BLOCK.match(line.rstrip("\n"))
            if block is not None and block.group("table") == table:
                for count, row in enumerate(lines):
                    if row.rstrip("\n") == "\\.":
                        return count
    return 0


async def _restore_reference(store: Store, path: Path, *, force: bool) -> RestoreReport:
    """The reference plugin's ``embed_backup_*.json``: texts + metadata, no vectors.

    MERGED into the store, never replacing it: its users restore it into a store that
    already holds what was written since (memos, newer memories). It goes through the
    same merge as ``import-legacy`` (:func:`merge_memories`): keys migrated, an id
    already in its partition kept as it is, the per-partition cap respected (what does
    not fit is reported per partition), ids that are not 32 hex digits derived from
    partition and old id, so a second run changes nothing.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BackupError(f"{path.name} is not JSON: {exc.msg}") from exc
    except UnicodeDecodeError as exc:
        raise BackupError(not_utf8(path.name, exc)) from exc
    if not isinstance(data, dict) or not {"ids", "documents", "metadatas"} <= set(data):
        raise BackupError(f"{path.name} is neither our backup nor the reference plugin's")
    ids, documents, metadatas = data["ids"] or [], data["documents"] or [], data["metadatas"] or []
    if not len(ids) == len(documents) == len(metadatas):
        raise BackupError(
            f"{path.name} is inconsistent: {len(ids)} ids, {len(documents)} documents, {len(metadatas)} metadatas"
        )
    # A missing created_at falls back to the backup's own time (stable across runs).
    when = parse_created_at(data.get("created_at")) or datetime.fromtimestamp(
        path.stat().st_mtime, UTC
    )
    memories: list[LegacyMemory] = []
    merge = ImportReport(
        dry_run=False, on_conflict="skip", cap=store.settings.per_session_memory_limit
    )
    seen: set[tuple[str, str]] = set()
    for raw_id, text, meta in zip(ids, documents, metadatas, strict=True):
        converted = convert_memory(raw_id, text, meta, fallback_time=when)
        if not isinstance(converted, LegacyMemory):
            merge.skipped.append(converted)
        elif (converted.partition_key, converted.id) not in seen:
            seen.add((converted.partition_key, converted.id))
            memories.append(converted)
    if merge.skipped:
        log.warning(
            "%s: skipped %d entries without a recognisable partition key or text",
            path.name,
            len(merge.skipped),
        )
    report = RestoreReport(source=path, kind="reference-json")
    report.safety_backup = await _safety_backup(store, path)
    stored = (await store_meta.read(store.pool)).fingerprint
    if await count_all(store.pool) == 0:
        # an empty store takes the configured model
        provider = store.embedder.provider
        await store.embedder.prepare()
        async with store.pool.acquire() as conn:
            await store_meta.write_model(
                conn,
                fingerprint=store.embedder.fingerprint,
                protocol=provider.protocol,
                model=provider.model,
                base_url=provider.base_url,
                dim=store.embedder.dim,
                keep_dim=False,
            )
    elif stored != store.embedder.fingerprint:
        # the live rows first move to the configured model (the safety backup is taken)
        result = await change_model(store, backup=False)
        report.reembedded += result.embedded
    await merge_memories(store, memories, {}, merge)
    report.merged = merge.counts["memory"]["inserted"]
    # kept: identical rows and rows that differ (ours kept), as before the split
    report.kept_existing = merge.counts["memory"]["present"] + merge.counts["memory"]["unchanged"]
    report.overflow = dict(merge.overflow)
    report.skipped = len(merge.skipped)
    report.reembedded += merge.vectors_embedded
    return await _after_restore(store, report, await _saved_ledger(store))
