"""``import-legacy``: merge an amrita_plugin_memory installation into a live store.

Reads, never writes, the old data directory (``data/amrita_plugin_memory``): its Chroma
directory is COPIED to a temporary directory and opened there (a newer chromadb
migrates the files it opens), its SQLite database is opened read-only
(``mode=ro`` URI; a PostgreSQL one through read-only transactions), the other files are
only read. What it finds:

- L2 memories (Chroma ``amrita_user_memory``): merged through ``import_memory_v2``: ids
  kept, keys migrated, the per-partition cap respected (the newest memories of a
  partition first; what does not fit is reported per partition), existing ids kept or
  replaced (``on_conflict``). Vectors are reused when the collection's
  ``embed_fingerprint`` is the configured model's, else re-embedded in batches.
- L1 memos (``amrita_plugin_memory_user_memo``): merged, same conflict rule.
- Knowledge files + index, ``user_profile.md``, the L3 state row
  (``amrita_plugin_memory_subconscious_state``): parsed and reported; this build has no
  store for them yet (the report says so).
- ``config/amrita_plugin_memory/config.toml``: validated against our settings and
  rendered as our TOML for review.

Resumable by idempotence alone, no progress table: every batch is one transaction, and
a second run finds the rows of committed batches ``present`` (or ``unchanged``) BEFORE
embedding anything, so a killed import continues where it stopped and re-embeds only the
batch that was in flight. Unreadable parts are reported; the rest continues.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import tomllib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from amrita_memory_pg.domain.decay import parse_created_at
from amrita_memory_pg.domain.errors import AmritaMemoryError, ConfigError, ProfileRefused
from amrita_memory_pg.domain.fingerprint import describe as describe_model
from amrita_memory_pg.domain.keys import KEY_FORMAT_VERSION, personal_key
from amrita_memory_pg.domain.knowledge import (
    KnowledgeEntry,
    from_markdown,
    kid_of_file,
    normalize_body,
)
from amrita_memory_pg.domain.legacy import (
    LegacyMemo,
    LegacyMemory,
    LegacyState,
    Skipped,
    convert_memory,
    convert_memos,
    memo_problem,
    memory_problem,
    parse_knowledge_index,
    parse_state_payload,
    render_toml,
)
from amrita_memory_pg.domain.planner import HeatState
from amrita_memory_pg.domain.ports import Vector
from amrita_memory_pg.domain.profile import Profile, ProfileActor, parse_profile_file
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.domain.trail import Actor
from amrita_memory_pg.domain.validation import (
    InvalidInput,
    check_knowledge_body,
    check_knowledge_summary,
    check_knowledge_title,
    echo,
)
from amrita_memory_pg.i18n import Catalog, Translator
from amrita_memory_pg.maintenance.knowledge import knowledge_service
from amrita_memory_pg.resources import sql_dir
from amrita_memory_pg.services.profiles import ProfileService
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.settings import Settings, accepted_only, iter_fields, load_settings
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.chroma.reference import ChromaData, read_reference_collection
from amrita_memory_pg.storage.memories import hold_index_gate, record_from_row
from amrita_memory_pg.storage.profiles import ProfileRepository
from amrita_memory_pg.storage.queries import load_queries, query
from amrita_memory_pg.storage.trail import act

log = logging.getLogger(__name__)

OnConflict = Literal["skip", "replace"]
#: called with (items done, items in total) after every batch
Progress = Callable[[int, int], None]

MEMORY_COLLECTION = "amrita_user_memory"
MEMO_TABLE = "amrita_plugin_memory_user_memo"
STATE_TABLE = "amrita_plugin_memory_subconscious_state"
STATE_UID = "amrita_memory"
#: joins a memory's tags into one text for the batch statement (never inside a tag: tags
#: are trimmed words from the reference's comma-separated string)
TAG_SEPARATOR = "\x1f"


#: the old plugin's data directory below a bot's root folder
DATA_SUBDIR = Path("data") / "amrita_plugin_memory"
#: what an old data directory holds (any one of them is enough to recognise it)
_DATA_MARKS = ("vector_db.chroma", "knowledge", "knowledge_index.json", "user_profile.md")


def resolve_data_dir(path: Path) -> Path:
    """The old data directory from what the operator typed: the data directory itself,
    or the bot's root folder holding ``data/amrita_plugin_memory`` (the natural thing to
    type, which used to import nothing and exit 0). Raises :class:`AmritaMemoryError`
    naming the folder it expected otherwise."""
    path = path.expanduser().resolve()
    if not path.is_dir():
        raise AmritaMemoryError(f"旧数据目录不存在: {path}")
    if any((path / mark).exists() for mark in _DATA_MARKS):
        return path
    below = path / DATA_SUBDIR
    if below.is_dir():
        return below
    raise AmritaMemoryError(
        f"{path} 不是旧插件的数据目录（其中没有 vector_db.chroma、knowledge 或 user_profile.md），"
        f"也没有 {below}：请给出机器人目录或其中的 data/amrita_plugin_memory"
    )


@dataclass(slots=True)
class Layout:
    """Where the parts of an old installation are (each may be missing)."""

    data_dir: Path
    chroma_dir: Path
    database: str | None
    knowledge_dir: Path
    knowledge_index: Path
    profile: Path
    config: Path | None


def locate(
    data_dir: Path,
    *,
    db: str | None = None,
    config: Path | None = None,
    chroma_dir: Path | None = None,
) -> Layout:
    """The old layout under ``data_dir`` (``…/data/amrita_plugin_memory``).

    The database: ``db`` (a path or ``sqlite:///…`` URL), else nonebot-plugin-orm's
    default SQLite file beside the plugin's data dir (``data/nonebot_plugin_orm/db.sqlite3``)
    or inside it. The config: ``config``, else ``config/amrita_plugin_memory/config.toml``
    of the bot directory two levels above ``data_dir``.
    """
    data_dir = data_dir.expanduser().resolve()
    if db is None:
        for candidate in (
            data_dir.parent / "nonebot_plugin_orm" / "db.sqlite3",
            data_dir / "db.sqlite3",
        ):
            if candidate.is_file():
                db = str(candidate)
                break
    if config is None:
        candidate = data_dir.parent.parent / "config" / "amrita_plugin_memory" / "config.toml"
        config = candidate if candidate.is_file() else None
    return Layout(
        data_dir=data_dir,
        chroma_dir=chroma_dir.expanduser() if chroma_dir else data_dir / "vector_db.chroma",
        database=db,
        knowledge_dir=data_dir / "knowledge",
        knowledge_index=data_dir / "knowledge_index.json",
        profile=data_dir / "user_profile.md",
        config=config,
    )


#: the report's default language (the operator output's): the CLI passes its own
CHINESE: Translator = Catalog("amrita_memory_pg").translator("zh")


@dataclass(slots=True)
class ImportReport:
    dry_run: bool
    on_conflict: OnConflict
    #: kind → outcome → count (memory: inserted/present/unchanged/replaced/full; memo: …)
    counts: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    skipped: list[Skipped] = field(default_factory=list)
    #: (what, error): files or tables that could not be read
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    #: partition → memories that did not fit under the cap
    overflow: dict[str, int] = field(default_factory=dict)
    cap: int = 0
    vectors_reused: int = 0
    vectors_embedded: int = 0
    #: why vectors were (not) reused
    vector_note: str = ""
    knowledge: list[KnowledgeEntry] = field(default_factory=list)
    profile: Profile | None = None
    profile_owner: str | None = None
    state: LegacyState | None = None
    #: the target whose l3_state row the old state went to
    state_target: str | None = None
    config_toml: str | None = None
    config_notes: list[str] = field(default_factory=list)
    #: what this build cannot import yet (said in the report, never claimed as done)
    not_available: list[str] = field(default_factory=list)
    #: the old collection's embedding model and the one this import writes with
    source_model: str = ""
    target_model: str = ""

    def render(self, t: Translator | None = None) -> list[str]:
        """The report as lines in ``t``'s language (the CLI's; Chinese by default, like
        the rest of the operator output)."""
        t = t or CHINESE
        lines = [
            t("legacy.head", dry=t("legacy.dry") if self.dry_run else "", policy=self.on_conflict)
        ]
        # One vocabulary whatever --on-conflict says: identical, or differs and kept
        # ours, or differs and replaced.
        outcomes = ("inserted", "unchanged", "present", "replaced", "full")
        for kind in ("memory", "memo", "knowledge", "profile", "state", "pending", "suggestion"):
            counter = self.counts.get(kind, Counter())
            if kind not in ("memory", "memo") and not counter:
                continue
            label = t(f"legacy.kind.{kind}")
            if kind == "state" and self.state_target:
                label += t("legacy.state_target", target=self.state_target)
            parts = [
                t("legacy.count", name=t(f"legacy.n.{k}"), n=counter[k])
                for k in outcomes
                if counter.get(k)
            ]
            joined = t("legacy.sep").join(parts) if parts else t("legacy.none")
            lines.append(t("legacy.kind_line", label=label, parts=joined))
        if self.source_model or self.target_model:
            old = self.source_model or t("legacy.unrecorded")
            lines.append(t("legacy.models", old=old, new=self.target_model))
        if self.vectors_reused or self.vectors_embedded or self.vector_note:
            lines.append(
                t(
                    "legacy.vectors",
                    verb=t("legacy.verb") if self.dry_run else "",
                    reused=self.vectors_reused,
                    embedded=self.vectors_embedded,
                    note=t("legacy.note", note=self.vector_note) if self.vector_note else "",
                )
            )
        if self.overflow:
            lines.append(t("legacy.overflow", cap=self.cap))
            for key, n in sorted(self.overflow.items()):
                lines.append(t("legacy.overflow_row", key=key, n=n))
        if self.profile is not None:
            owner = t("legacy.owner", owner=self.profile_owner) if self.profile_owner else ""
            lines.append(
                t(
                    "legacy.profile_file",
                    summary=len(self.profile.summary),
                    lines=len(self.profile.lines),
                    owner=owner,
                )
            )
        if self.state is not None:
            s = self.state
            lines.append(
                t(
                    "legacy.state",
                    runs=s.total_runs,
                    penalty=s.penalty,
                    pending=len(s.pending_messages),
                    suggestions=len(s.knowledge_suggestions),
                )
            )
        for note in self.not_available:
            lines.append(t("legacy.warning", note=note))
        if self.skipped:
            lines.append(t("legacy.skipped", n=len(self.skipped)))
            for item in self.skipped[:50]:
                lines.append(
                    t("legacy.skipped_row", kind=item.kind, item=item.item, reason=item.reason)
                )
            if len(self.skipped) > 50:
                lines.append(t("legacy.more", n=len(self.skipped) - 50))
        if self.unreadable:
            lines.append(t("legacy.unreadable", n=len(self.unreadable)))
            for what, error in self.unreadable:
                lines.append(t("legacy.unreadable_row", what=what, error=error))
        return lines


# ---------------------------------------------------------------------------- readers


def _legacy_query(name: str) -> str:
    """A statement for the OLD plugin's database (``sql/legacy/*.sql``, SQLite or PG)."""
    return load_queries(sql_dir() / "legacy")[name].sql


def _sqlite_path(db: str) -> Path | None:
    """A SQLite file from a path or a ``sqlite[+driver]:///`` URL; None for other URLs."""
    if "://" not in db:
        return Path(db).expanduser()
    parts = urlsplit(db)
    if not parts.scheme.startswith("sqlite"):
        return None
    raw = unquote(db.split(":///", 1)[1]) if ":///" in db else ""
    return Path(raw).expanduser() if raw else None


def _read_sqlite_sync(
    path: Path,
) -> tuple[list[tuple[object, object, object, object]] | None, str | None, list[tuple[str, str]]]:
    """(memo rows, state payload, problems) from the old database, opened read-only."""
    problems: list[tuple[str, str]] = []
    memos: list[tuple[object, object, object, object]] | None = None
    payload: str | None = None
    uri = f"file:{path}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, detect_types=0)
    try:
        try:
            memos = [
                (r[0], r[1], r[2], r[3]) for r in conn.execute(_legacy_query("reference_memos"))
            ]
        except sqlite3.Error as exc:
            problems.append((f"{path}: 表 {MEMO_TABLE}", str(exc)))
        try:
            row = conn.execute(_legacy_query("reference_state"), (STATE_UID,)).fetchone()
            payload = row[0] if row else None
        except sqlite3.Error as exc:
            problems.append((f"{path}: 表 {STATE_TABLE}", str(exc)))
    finally:
        conn.close()
    return memos, payload, problems


def _postgres_url(db: str) -> str | None:
    """A libpq URL from a ``postgresql[+driver]://`` one (SQLAlchemy style); else None."""
    scheme, sep, rest = db.partition("://")
    if not sep or scheme.split("+", 1)[0] not in ("postgresql", "postgres"):
        return None
    return f"postgresql://{rest}"


async def _read_postgres(
    url: str,
) -> tuple[list[tuple[object, object, object, object]] | None, str | None, list[tuple[str, str]]]:
    """(memo rows, state payload, problems) from an old PostgreSQL database, read-only."""
    import asyncpg

    from amrita_memory_pg.domain.redact import redact

    problems: list[tuple[str, str]] = []
    memos: list[tuple[object, object, object, object]] | None = None
    payload: str | None = None
    where = redact(url)
    conn = await asyncpg.connect(url)
    try:
        try:
            async with conn.transaction(readonly=True):
                memos = [
                    (r[0], r[1], r[2], r[3])
                    for r in await conn.fetch(_legacy_query("reference_memos_pg"))
                ]
        except asyncpg.PostgresError as exc:
            problems.append((f"{where}: 表 {MEMO_TABLE}", str(exc)))
        try:
            async with conn.transaction(readonly=True):
                payload = await conn.fetchval(_legacy_query("reference_state_pg"), STATE_UID)
        except asyncpg.PostgresError as exc:
            problems.append((f"{where}: 表 {STATE_TABLE}", str(exc)))
    finally:
        await conn.close()
    return memos, payload, problems


def read_knowledge(layout: Layout, report: ImportReport, max_chars: int) -> list[KnowledgeEntry]:
    """The old ``KNOWLEDGE_{kid}.md`` files, parsed and checked like ``knowledge import``
    does (the knowledge base's own parser and validation), but one file at a time: a
    broken file is reported and the others still come in."""
    index: set[str] = set()
    if layout.knowledge_index.is_file():
        try:
            text = layout.knowledge_index.read_text(encoding="utf-8")
            index = {item["kid"] for item in parse_knowledge_index(text)}
        except (OSError, ValueError) as exc:
            report.unreadable.append((str(layout.knowledge_index), str(exc)))
    entries: list[KnowledgeEntry] = []
    if not layout.knowledge_dir.is_dir():
        return entries
    for path in sorted(layout.knowledge_dir.glob("KNOWLEDGE_*.md")):
        kid = kid_of_file(path.name)
        if kid is None:
            report.unreadable.append((str(path), "文件名不是 KNOWLEDGE_<8 位十六进制>.md"))
            continue
        try:
            entry = from_markdown(kid, path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            report.unreadable.append((str(path), str(exc)))
            continue
        name = "title"
        try:
            check_knowledge_title(entry.title)
            name = "summary"
            check_knowledge_summary(entry.summary)
            name = "body"
            check_knowledge_body(entry.body, max_chars)
        except InvalidInput as exc:
            report.unreadable.append((str(path), f"{name} {exc.reason}"))
            continue
        entries.append(entry)
    for kid in sorted(index - {e.kid for e in entries}):
        if not (layout.knowledge_dir / f"KNOWLEDGE_{kid}.md").exists():
            report.skipped.append(Skipped("knowledge", kid, "索引中有、文件不存在"))
    return entries


async def _import_knowledge(
    store: Store, entries: list[KnowledgeEntry], report: ImportReport
) -> None:
    """Each entry under its own kid through the knowledge service (summary embedded with
    the configured model); an entry already there is kept unless ``replace``."""
    kb = knowledge_service(store)
    for entry in entries:
        current = await kb.repo.get(entry.kid)
        if current is None:
            outcome = "inserted"
        elif (current.title, current.summary, current.body) == (
            entry.title,
            entry.summary,
            normalize_body(entry.body),
        ):
            outcome = "unchanged"
        elif report.on_conflict == "skip":
            outcome = "present"
        else:
            outcome = "replaced"
        if outcome in ("inserted", "replaced") and not report.dry_run:
            try:
                await kb.put(entry)
            except AmritaMemoryError as exc:
                report.skipped.append(Skipped("knowledge", entry.kid, str(exc)))
                continue
        report.counts["knowledge"][outcome] += 1


def translate_config(path: Path) -> tuple[str, list[str]]:
    """The old ``config.toml`` as our TOML, and notes for the operator.

    Our keys are the reference's (plus ours), so the translation validates the file
    against our settings, keeps every key it sets, marks the ones we accept but do not
    use yet, and adds nothing else. Raises :class:`ConfigError` for a file we refuse.
    """
    tree = tomllib.loads(path.read_text(encoding="utf-8"))
    settings: Settings = load_settings(path, env={}, read_default_files=False)
    notes: dict[tuple[str, ...], str] = {}
    messages: list[str] = []
    fields = dict(iter_fields())
    for key_path, info in fields.items():
        found: Any = tree
        for part in key_path:
            found = found.get(part) if isinstance(found, dict) else None
        if found is None:
            continue
        note = accepted_only(info)
        if note:
            notes[key_path] = note
            messages.append(f"{'.'.join(key_path)}: {note}")
    target = settings.subconscious.target_user_id
    if target:
        messages.append(
            f"subconscious.target_user_id = {target}：旧插件潜意识（L3）的目标用户，"
            f"其画像与 L3 状态归到 {personal_key('qq', target)} 名下"
        )
    if settings.subconscious.enabled:
        # Our default is off: without the translated file the imported L3 state would
        # sit unused and nothing would say why.
        messages.append(
            "旧安装开启了潜意识（L3，subconscious.enabled = true），本插件默认关闭："
            "写入下面的配置（--write-config config/amrita_memory_pg/config.toml）即可沿用"
        )
    return render_toml(tree, notes), messages


# ---------------------------------------------------------------------------- import


def _source_model(meta: dict[str, Any]) -> str:
    """The old collection's model as the reference recorded it (``embed_*`` metadata)."""
    if not any(meta.get(k) for k in ("embed_protocol", "embed_model", "embed_base_url")):
        return ""
    return describe_model(
        str(meta.get("embed_protocol") or ""),
        str(meta.get("embed_model") or ""),
        str(meta.get("embed_base_url") or ""),
    )


def _reusable(data: ChromaData, fingerprint: str, dim: int | None) -> tuple[bool, str]:
    stored = data.collection_meta.get("embed_fingerprint")
    if not stored:
        return False, "旧集合没有记录嵌入模型指纹，需重新嵌入"
    if stored != fingerprint:
        return False, "旧集合的嵌入模型与当前配置不同，需重新嵌入"
    dims = {len(v) for v in data.vectors if v is not None}
    if dim is not None and dims and dims != {dim}:
        return False, f"旧向量维度 {sorted(dims)} 与当前 {dim} 不同，需重新嵌入"
    return True, "旧集合的嵌入模型与当前配置一致，沿用旧向量"


async def _plan_memories(
    store: Store, memories: list[LegacyMemory], report: ImportReport
) -> list[tuple[LegacyMemory, bool, str | None]]:
    """(memory, already stored, stored content) in import order, the cap applied.

    Per partition, new memories are taken newest first up to the free room
    (cap − stored); the rest is counted in ``report.overflow``. The same data against
    the same store always gives the same plan, also after an interrupted run.
    """
    existing: dict[tuple[str, str], str] = {}
    for start in range(0, len(memories), 1000):
        chunk = memories[start : start + 1000]
        rows = await store.pool.fetch(
            query("import_existing_memories"),
            [m.partition_key for m in chunk],
            [m.id for m in chunk],
        )
        existing.update({(r["partition_key"], r["id"]): r["content"] for r in rows})
    keys = sorted({m.partition_key for m in memories})
    counts = {
        r["partition_key"]: r["n"]
        for r in await store.pool.fetch(query("import_partition_counts"), keys)
    }
    by_partition: dict[str, list[LegacyMemory]] = defaultdict(list)
    for m in memories:
        by_partition[m.partition_key].append(m)
    plan: list[tuple[LegacyMemory, bool, str | None]] = []
    cap = store.settings.per_session_memory_limit
    for key in keys:
        items = sorted(by_partition[key], key=lambda m: (m.created_at, m.id), reverse=True)
        room = max(0, cap - counts.get(key, 0))
        for m in items:
            stored = existing.get((key, m.id))
            if stored is not None:
                plan.append((m, True, stored))
            elif room > 0:
                room -= 1
                plan.append((m, False, None))
            else:
                report.overflow[key] = report.overflow.get(key, 0) + 1
                report.counts["memory"]["full"] += 1
    return plan


def vector_text(vector: Vector) -> str:
    """pgvector's text form of a vector: the batch statement takes them as ``text[]``
    (asyncpg has no binary codec for ``vector[]``). ``repr`` of a float32 widened to a
    double is exact, so the stored float4 values are the ones given."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


async def _import_memories(
    store: Store,
    plan: list[tuple[LegacyMemory, bool, str | None]],
    vectors: dict[str, Vector],
    report: ImportReport,
    progress: Progress | None,
) -> None:
    batch_size = store.settings.embedding.reembed_batch_size
    replace = report.on_conflict == "replace"
    cap = store.settings.per_session_memory_limit
    provider = store.embedder.provider
    total = len(plan)
    done = 0
    if progress is not None:
        progress(0, total)
    for start in range(0, total, batch_size):
        batch = plan[start : start + batch_size]
        # What needs a vector: new rows, and replaced rows whose text changes.
        need = [
            m
            for m, present, stored in batch
            if (not present or (replace and stored != m.content)) and m.id not in vectors
        ]
        if report.dry_run:
            report.vectors_embedded += len(need)
            report.vectors_reused += sum(
                1
                for m, present, stored in batch
                if m.id in vectors and (not present or (replace and stored != m.content))
            )
            for m, present, stored in batch:
                if not present:
                    outcome = "inserted"
                elif stored == m.content:
                    outcome = "unchanged"
                else:
                    outcome = "replaced" if replace else "present"
                report.counts["memory"][outcome] += 1
            done += len(batch)
            if progress is not None:
                progress(done, total)
            continue
        fresh: dict[str, Vector] = {}
        if need:
            # Embed before the transaction opens: an outage writes nothing of this batch.
            embedded = await store.embedder.embed_passages([m.content for m in need])
            fresh = {m.id: v for m, v in zip(need, embedded, strict=True)}
            report.vectors_embedded += len(need)
        calls: list[tuple[LegacyMemory, Vector | None]] = []
        for m, present, stored in batch:
            if present and not replace:
                # kept as it is: nothing to ask the database
                report.counts["memory"]["unchanged" if stored == m.content else "present"] += 1
                continue
            vector = fresh.get(m.id)
            if vector is None:
                vector = vectors.get(m.id)
            if present and stored == m.content:
                vector = None  # the stored vector stays valid
            calls.append((m, vector))
        if not calls:
            done += len(batch)
            if progress is not None:
                progress(done, total)
            continue
        async with store.pool.acquire() as conn, conn.transaction():
            # The change history records these rows as the import's.
            await act(conn, actor=Actor("import", "legacy"))
            # One statement for the batch (import_memory_v2 per row, in order).
            rows = await conn.fetch(
                query("import_memories"),
                [m.id for m, _ in calls],
                [m.partition_key for m, _ in calls],
                [m.scope for m, _ in calls],
                [m.content for m, _ in calls],
                [TAG_SEPARATOR.join(m.tags) for m, _ in calls],
                [m.importance for m, _ in calls],
                [m.created_at for m, _ in calls],
                [None if v is None else vector_text(v) for _, v in calls],
                store.embedder.fingerprint,
                datetime.now(UTC),
                cap,
                replace,
                provider.protocol,
                provider.model,
                provider.base_url,
            )
            assert len(rows) == len(calls)
            # Search tokens (keyword and hybrid search) of every row written, in the same
            # transaction: import_memory_v2 predates them (a new row would wait for the backfill, a
            # replaced one would keep the tokens of its old text).
            tokenized: list[tuple[str, str, str, list[str]]] = []
            await hold_index_gate(conn, store.backend)
            for (m, vector), row in zip(calls, rows, strict=True):
                outcome = row["outcome"]
                report.counts["memory"][outcome] += 1
                if outcome == "full":
                    report.overflow[m.partition_key] = report.overflow.get(m.partition_key, 0) + 1
                if outcome not in ("inserted", "replaced"):
                    continue
                tokenized.append((m.partition_key, m.id, m.content, search_tokens(m.content)))
                if vector is not None and m.id not in fresh:
                    report.vectors_reused += 1
                if store.backend.write_hooks:
                    record = record_from_row(
                        await conn.fetchrow(query("import_memory_row"), m.partition_key, m.id)
                    )
                    if outcome == "inserted":
                        assert vector is not None
                        await store.backend.added(record, vector)
                    else:
                        await store.backend.updated(record, vector)
            if tokenized:
                await conn.executemany(query("set_imported_memory_tokens"), tokenized)
        done += len(batch)
        if progress is not None:
            progress(done, total)


async def merge_memories(
    store: Store,
    memories: list[LegacyMemory],
    vectors: dict[str, Vector],
    report: ImportReport,
    progress: Progress | None = None,
) -> None:
    """Merge converted memories into the store (cap, conflicts, batches; see the module doc).

    ``vectors`` (id → vector) are used as they are: only pass vectors of the configured
    model. Everything else is embedded, a batch at a time, before its transaction.
    """
    plan = await _plan_memories(store, memories, report)
    await _import_memories(store, plan, vectors, report, progress)


async def _import_memos(store: Store, memos: list[LegacyMemo], report: ImportReport) -> None:
    if not memos:
        return
    keys = [m.partition_key for m in memos]
    async with store.pool.acquire() as conn, conn.transaction():
        stored = {
            r["partition_key"]: r["content"]
            for r in await conn.fetch(query("import_existing_memos"), keys)
        }
        now = datetime.now(UTC)
        for memo in memos:
            current = stored.get(memo.partition_key)
            if current is None:
                outcome = "inserted"
                if not report.dry_run:
                    row = await conn.fetchrow(
                        query("import_memo_insert"),
                        memo.partition_key,
                        memo.content,
                        memo.version,
                        memo.updated_at,
                    )
                    outcome = "inserted" if row is not None else "present"
            elif current == memo.content:
                outcome = "unchanged"
            elif report.on_conflict == "skip":
                outcome = "present"
            else:
                outcome = "replaced"
                if not report.dry_run:
                    await conn.execute(
                        query("import_memo_replace"), memo.partition_key, memo.content, now
                    )
            report.counts["memo"][outcome] += 1


def _state_target(report: ImportReport, settings: Settings) -> str | None:
    """Whose state (and profile) the old files are: the old config's target_user_id,
    else ours (the reference served one target user)."""
    target = ""
    if report.config_toml is not None:
        sub = tomllib.loads(report.config_toml).get("subconscious")
        if isinstance(sub, dict):
            target = str(sub.get("target_user_id") or "")
    target = target or settings.subconscious.target_user_id
    return personal_key("qq", target) if target else None


async def _import_state(
    store: Store, state: LegacyState, target: str | None, report: ImportReport
) -> None:
    """The old L3 state → the target's ``l3_state`` row (penalty, runs, last run, summary,
    heatmap); the rest of the old payload is counted in ``not_available``."""
    if target is None:
        report.skipped.append(
            Skipped("state", STATE_UID, "旧配置与当前配置都没有 target_user_id，无法确定归属")
        )
        return
    heat = HeatState.from_json(state.idle_planner, store.settings.subconscious.idle_timezone)
    last_end = datetime.fromtimestamp(state.last_run_ts, UTC) if state.last_run_ts > 0 else None
    args = (
        target,
        max(0, state.penalty),
        max(0, state.total_runs),
        last_end,
        state.last_iter_summary or None,
        json.dumps(heat.to_json()),
        datetime.now(UTC),
    )
    async with store.pool.acquire() as conn, conn.transaction():
        exists = await conn.fetchval(query("import_l3_state_exists"), target)
        if not exists:
            outcome = "inserted"
            if (
                not report.dry_run
                and await conn.fetchrow(query("import_l3_state_insert"), *args) is None
            ):
                outcome = "present"
        elif await conn.fetchval(query("import_l3_state_same"), *args[:6]):
            outcome = "unchanged"
        elif report.on_conflict == "skip":
            outcome = "present"
        elif report.dry_run:
            outcome = "replaced"
        else:
            changed = await conn.fetchrow(query("import_l3_state_replace"), *args)
            outcome = "replaced" if changed is not None else "unchanged"
    report.counts["state"][outcome] += 1
    report.state_target = target
    await _import_pending(store, state, target, report)


def _queued_at(stamp: object) -> datetime | None:
    """When the old plugin queued something: an ISO string (what it writes, +00:00) or
    epoch seconds; None when neither."""
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return datetime.fromtimestamp(float(stamp), UTC)
    return parse_created_at(stamp)


#: the author the old plugin's suggestions are queued under (it recorded none)
SUGGESTION_AUTHOR = "import-legacy"


async def _import_suggestions(store: Store, state: LegacyState, report: ImportReport) -> None:
    """The old queue of knowledge suggestions (§4.10 objects) → our suggestion queue, for
    the loop or an operator to review; checked like a new suggestion, the queue bound
    kept, no rate limit (they were suggested long ago), each queued once however often
    the import runs."""
    sub = store.settings.subconscious
    fallback = datetime.fromtimestamp(state.last_run_ts or 0.0, UTC)
    for item in state.knowledge_suggestions:
        title = str(item.get("title") or "").strip()
        name = title[:40] or repr(item)[:40]
        action = "update" if item.get("action") == "update" and item.get("kid") else "create"
        kid = str(item.get("kid") or "").strip() if action == "update" else None
        summary = str(item.get("summary") or "").strip()
        body = str(item.get("body") or item.get("content") or "")
        reason = str(item.get("reason") or "")
        when = _queued_at(item.get("timestamp")) or fallback
        part = "title"
        try:
            check_knowledge_title(title)
            part = "summary"
            check_knowledge_summary(summary or title)
            part = "body"
            check_knowledge_body(body, sub.knowledge_max_chars)
        except InvalidInput as exc:
            report.skipped.append(Skipped("suggestion", name, f"{part} {exc.reason}"))
            continue
        async with store.pool.acquire() as conn:
            if await conn.fetchval(
                query("import_suggestion_exists"), SUGGESTION_AUTHOR, title, body, when
            ):
                report.counts["suggestion"]["unchanged"] += 1
                continue
            if report.dry_run:
                report.counts["suggestion"]["inserted"] += 1
                continue
            row = await conn.fetchrow(
                query("import_knowledge_suggestion"),
                action,
                kid,
                title,
                summary or title,
                body,
                reason,
                SUGGESTION_AUTHOR,
                sub.knowledge_suggest_max,
                0,
                1,
                when,
            )
        status = row["status"] if row is not None else "full"
        if status == "queued":
            report.counts["suggestion"]["inserted"] += 1
        elif status == "unknown_kid":
            report.skipped.append(Skipped("suggestion", name, f"要更新的知识条目 {kid} 不存在"))
        else:
            report.skipped.append(
                Skipped("suggestion", name, f"建议队列已满（{sub.knowledge_suggest_max} 条）")
            )


async def _import_pending(
    store: Store, state: LegacyState, target: str, report: ImportReport
) -> None:
    """The old queue of proactive messages (``{content, timestamp}``) → pending again for
    the target, delivered once on its next message; each only once, however often the
    import runs."""
    async with store.pool.acquire() as conn, conn.transaction():
        for item in state.pending_messages:
            content = item.get("content")
            stamp = item.get("timestamp")
            if not isinstance(content, str) or not content.strip():
                report.skipped.append(Skipped("pending", repr(item)[:60], "空消息"))
                continue
            when = _queued_at(stamp) or datetime.fromtimestamp(state.last_run_ts or 0.0, UTC)
            if report.dry_run:
                report.counts["pending"]["inserted"] += 1
                continue
            row = await conn.fetchrow(query("import_pending_message"), target, content, when)
            report.counts["pending"]["inserted" if row is not None else "unchanged"] += 1


async def _import_profile(
    store: Store, profile: Profile, owner: str | None, report: ImportReport
) -> None:
    """``user_profile.md`` → the target user's profile, through the profile service (its
    caps, its lock, a history row that ``profile revert`` can undo)."""
    if owner is None:
        report.skipped.append(
            Skipped(
                "profile", "user_profile.md", "旧配置与当前配置都没有 target_user_id，无法确定归属"
            )
        )
        return
    service = ProfileService(
        ProfileRepository(store.pool, acquire_timeout=store.settings.database.connect_timeout),
        store.settings.profile,
    )
    current = await service.get(owner)
    same = (current.summary, current.lines) == (profile.summary, profile.lines)
    if current.empty:
        outcome = "inserted"
    elif same:
        outcome = "unchanged"
    elif report.on_conflict == "skip":
        outcome = "present"
    else:
        outcome = "replaced"
    if outcome in ("inserted", "replaced") and not report.dry_run:
        try:
            await service.replace(
                owner,
                profile,
                ProfileActor("cli", "import-legacy"),
                operation="import user_profile.md",
            )
        except ProfileRefused as exc:
            report.skipped.append(Skipped("profile", "user_profile.md", str(exc)))
            return
    report.counts["profile"][outcome] += 1


async def import_legacy(
    store: Store,
    data_dir: Path,
    *,
    db: str | None = None,
    config: Path | None = None,
    chroma_dir: Path | None = None,
    dry_run: bool = False,
    on_conflict: OnConflict = "skip",
    progress: Progress | None = None,
) -> ImportReport:
    """Merge the old installation in ``data_dir`` (or the bot folder above it) into
    ``store``; see the module doc."""
    layout = locate(resolve_data_dir(data_dir), db=db, config=config, chroma_dir=chroma_dir)
    report = ImportReport(
        dry_run=dry_run,
        on_conflict=on_conflict,
        cap=store.settings.per_session_memory_limit,
    )
    settings = store.settings
    fallback = datetime.fromtimestamp(layout.data_dir.stat().st_mtime, UTC)

    # --- read everything first (nothing is written before the old data is understood)
    memories: list[LegacyMemory] = []
    old_vectors: dict[str, Vector] = {}
    chroma: ChromaData | None = None
    if layout.chroma_dir.is_dir():
        try:
            chroma = await asyncio.to_thread(
                read_reference_collection, layout.chroma_dir, MEMORY_COLLECTION
            )
        except ImportError:
            report.unreadable.append(
                (str(layout.chroma_dir), "需要 chromadb：pip install 'amrita-memory-pg[chroma]'")
            )
        except Exception as exc:  # chromadb raises many kinds; the rest must go on
            report.unreadable.append((str(layout.chroma_dir), f"{type(exc).__name__}: {exc}"))
        if chroma is None and not report.unreadable:
            report.skipped.append(
                Skipped("memory", str(layout.chroma_dir), f"没有集合 {MEMORY_COLLECTION}")
            )
    else:
        report.skipped.append(Skipped("memory", str(layout.chroma_dir), "目录不存在"))
    if chroma is not None:
        seen: set[tuple[str, str]] = set()
        for raw_id, doc, meta, vector in zip(
            chroma.ids, chroma.documents, chroma.metadatas, chroma.vectors, strict=True
        ):
            result = convert_memory(raw_id, doc, meta, fallback_time=chroma.mtime)
            if isinstance(result, Skipped):
                report.skipped.append(result)
                continue
            problem = memory_problem(result)
            if problem is not None:  # reported and skipped, in the dry run too
                report.skipped.append(Skipped("memory", echo(result.old_id), problem))
                continue
            if (result.partition_key, result.id) in seen:
                report.skipped.append(Skipped("memory", result.old_id, "迁移后与另一条记忆同 id"))
                continue
            seen.add((result.partition_key, result.id))
            memories.append(result)
            if vector is not None:
                old_vectors[result.id] = vector

    memo_rows: list[tuple[object, object, object, object]] = []
    if layout.database is None:
        report.skipped.append(
            Skipped(
                "memo",
                str(layout.data_dir.parent / "nonebot_plugin_orm" / "db.sqlite3"),
                "找不到旧数据库；用 --db 指定",
            )
        )
    else:
        path = _sqlite_path(layout.database)
        pg_url = _postgres_url(layout.database)
        rows: list[tuple[object, object, object, object]] | None = None
        payload: str | None = None
        problems: list[tuple[str, str]] = []
        read = False
        if pg_url is not None:
            try:
                rows, payload, problems = await _read_postgres(pg_url)
                read = True
            except Exception as exc:  # asyncpg raises many kinds when it cannot connect
                from amrita_memory_pg.domain.redact import redact

                report.unreadable.append((redact(pg_url), f"{type(exc).__name__}: {exc}"))
        elif path is None:
            report.unreadable.append(
                (
                    layout.database,
                    "只能读取 SQLite 文件或 PostgreSQL（postgresql://…）；其他数据库请先把两张表导出为 SQLite",
                )
            )
        elif not path.is_file():
            report.unreadable.append((str(path), "文件不存在"))
        else:
            try:
                rows, payload, problems = await asyncio.to_thread(_read_sqlite_sync, path)
                read = True
            except sqlite3.Error as exc:
                report.unreadable.append((str(path), str(exc)))
        if read:
            report.unreadable += problems
            memo_rows = rows or []
            if payload is not None:
                try:
                    report.state = parse_state_payload(payload)
                except ValueError as exc:
                    report.unreadable.append((f"{STATE_TABLE}.payload", str(exc)))
    memos, memo_skips = convert_memos(
        memo_rows, max_chars=settings.memo_max_chars, fallback_time=fallback
    )
    report.skipped += memo_skips
    for memo in list(memos):
        problem = memo_problem(memo)
        if problem is not None:
            report.skipped.append(Skipped("memo", echo(memo.old_key), problem))
            memos.remove(memo)

    report.knowledge = read_knowledge(layout, report, settings.subconscious.knowledge_max_chars)
    if layout.profile.is_file():
        try:
            report.profile = parse_profile_file(layout.profile.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            report.unreadable.append((str(layout.profile), str(exc)))
    if layout.config is not None:
        try:
            report.config_toml, report.config_notes = translate_config(layout.config)
        except (OSError, ValueError, ConfigError) as exc:
            report.unreadable.append((str(layout.config), str(exc)))
    if report.profile is not None:
        report.profile_owner = _state_target(report, settings)
    if report.state is not None:
        rest = report.state
        if rest.last_abstracts:
            report.not_available.append(
                f"L3 state: {len(rest.last_abstracts)} run abstracts parsed, import not "
                "available in this build (penalty, runs, last run, summary, heatmap, "
                "pending messages and knowledge suggestions are imported)"
            )

    # --- the store must be on the configured model before vectors of it are written
    meta = await store_meta.read(store.pool)
    if meta.fingerprint is not None and meta.fingerprint != store.embedder.fingerprint and memories:
        raise AmritaMemoryError(
            "当前存储的嵌入模型与配置不同：请先运行 `amrita-memory reindex`，再导入"
        )
    if chroma is not None:
        report.source_model = _source_model(chroma.collection_meta)
    if memories:
        await store.embedder.prepare()
        report.target_model = store.embedder.describe()
        reuse, report.vector_note = (
            _reusable(chroma, store.embedder.fingerprint, store.embedder.dim or meta.dim)
            if chroma is not None
            else (False, "")
        )
        await merge_memories(store, memories, old_vectors if reuse else {}, report, progress)
    await _import_memos(store, memos, report)
    if report.state is not None:
        await _import_state(store, report.state, _state_target(report, settings), report)
    if report.knowledge:
        await _import_knowledge(store, report.knowledge, report)
    if report.state is not None:
        # after the knowledge: an update suggestion names an entry imported just above
        await _import_suggestions(store, report.state, report)
    if report.profile is not None and not report.profile.empty:
        await _import_profile(store, report.profile, report.profile_owner, report)
    if not dry_run:
        await _record_key_format(store)
    return report


async def _record_key_format(store: Store) -> None:
    """Record the key format when every key of the store is current: the import wrote
    only current keys, and a fresh store had no version yet, so ``status`` asked for a
    ``migrate-keys`` that then found nothing. Legacy keys from before
    are left for ``migrate-keys``, as they were."""
    from amrita_memory_pg.maintenance.keys import migrate_keys

    if (await store_meta.read(store.pool)).key_format_version == KEY_FORMAT_VERSION:
        return
    pending = await migrate_keys(store.pool, dry_run=True)
    if not pending.mapping and not pending.unrecognised:
        async with store.pool.acquire() as conn:
            await store_meta.write_key_format_version(conn, KEY_FORMAT_VERSION)
