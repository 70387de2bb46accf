"""What ``amrita-memory status`` gathers and how it prints it (a web page can use both)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from amrita_memory_pg.domain.errors import BackendError
from amrita_memory_pg.domain.keys import KEY_FORMAT_VERSION
from amrita_memory_pg.i18n import Catalog, Translator
from amrita_memory_pg.maintenance.backup import BackupInfo, list_backups
from amrita_memory_pg.maintenance.fingerprint import FingerprintStatus, inspect_fingerprint
from amrita_memory_pg.maintenance.reembed import ReindexState, reindex_state
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.settings import Settings, loop_llm
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import (
    ServerInfo,
    ServerTarget,
    connect_once,
    server_info,
)
from amrita_memory_pg.storage.queries import query

#: the status's default language (the CLI passes its own)
CHINESE: Translator = Catalog("amrita_memory_pg").translator("zh")
TOP_PARTITIONS = 10


@dataclass(frozen=True, slots=True)
class SweepCursor:
    """Where the decay sweep stands: the next run continues after ``cursor``
    (``partition_key/id`` of the last memory swept, primary key order; '' = the start)."""

    cursor: str
    passes: int
    updated_at: datetime


@dataclass
class StatusReport:
    server: ServerInfo
    revision: str | None
    head: str
    socket_dir: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    fingerprint: FingerprintStatus | None = None
    dim: int | None = None
    key_format: int | None = None
    reindex: ReindexState | None = None
    by_scope: dict[str, int] = field(default_factory=dict)
    by_tier: dict[str, int] = field(default_factory=dict)
    partitions: list[tuple[str, int]] = field(default_factory=list)
    backups: list[BackupInfo] = field(default_factory=list)
    backend: str = "pgvector"
    #: a secondary index (chroma): its vector count against the table's rows
    vectors: str = ""
    #: the decay sweep's cursor (None before the first sweep)
    sweep: SweepCursor | None = None
    #: partitions whose kept row count (the cap's) differs from their rows:
    #: (key, kept, actual); None = not checked
    count_drift: list[tuple[str, int, int]] | None = None
    #: ``[backup] schedule`` and how its last claimed slot ended ("" = no schedule)
    scheduled_backup: str = ""
    #: the settings status was taken with: the L3 loop's model phrase (:func:`loop_model_status`)
    #: is said from them in the reader's language
    settings: Settings | None = None


async def collect_server_status(settings: Settings, target: ServerTarget) -> StatusReport:
    """Server facts; then :func:`collect_store_status` when ``revision == head``."""
    conn = await connect_once(target.dsn, settings.database.connect_timeout)
    try:
        info = await server_info(conn, target.kind, target.dsn)
        revision = await migrate.current_revision(conn)
    finally:
        await conn.close()
    report = StatusReport(
        server=info,
        revision=revision,
        head=migrate.head_revision(),
        socket_dir=str(target.embedded.socket_dir) if target.embedded is not None else None,
        backups=list_backups(settings.resolved_data_dir() / "backups"),
        backend=settings.vector_backend,
        settings=settings,
    )
    return report


def loop_model_status(settings: Settings, t: Translator | None = None) -> str:
    """The L3 loop's model in one phrase in ``t``'s language (Chinese by default), from
    the settings alone: the host's preset is looked up in the bot process
    (``/memory dmn`` names it), not here."""
    t = t or CHINESE
    if not settings.subconscious.enabled:
        return t("status.l3.off")
    sub = settings.subconscious
    llm = loop_llm(settings)
    configured = None
    if llm.base_url and llm.model:
        where = "[subconscious] llm_*" if sub.llm_base_url or sub.llm_model else "LLM_*"
        configured = t("status.l3.endpoint", model=llm.model, where=where)
    if sub.llm_base_url or sub.llm_model:
        return configured or t("status.l3.none")
    if configured:
        return t("status.l3.host_endpoint", endpoint=configured)
    return t("status.l3.host_none", none=t("status.l3.none"))


async def collect_store_status(store: Store, report: StatusReport) -> None:
    """The store's facts: counts, model, re-embed in progress, distribution, backend."""
    pool = store.pool
    row = await pool.fetchrow(query("status_counts"))
    assert row is not None
    meta = await store_meta.read(pool)
    report.counts = {
        k: row[k]
        for k in ("memories", "partitions", "memos", "knowledge", "profiles", "profile_changes")
    }
    kb = await pool.fetchrow(query("knowledge_counts"))
    assert kb is not None
    report.counts["suggestions"] = kb["suggestions"]
    report.counts["grants"] = kb["grants"]
    report.dim = meta.dim
    report.key_format = meta.key_format_version
    report.fingerprint = await inspect_fingerprint(store)
    report.reindex = await reindex_state(pool)
    report.by_scope = {r["scope"]: r["n"] for r in await pool.fetch(query("status_by_scope"))}
    tiers = await pool.fetchrow(query("status_by_tier"))
    assert tiers is not None
    report.by_tier = dict(tiers.items())
    report.partitions = [
        (r["partition_key"], r["memories"])
        for r in await pool.fetch(query("status_top_partitions"), TOP_PARTITIONS)
    ]
    report.count_drift = [
        (r["partition_key"], r["kept"], r["actual"])
        for r in await pool.fetch(query("status_partition_count_drift"))
    ]
    sweep = await pool.fetchrow(query("status_sweep_state"))
    if sweep is not None:
        report.sweep = SweepCursor(sweep["cursor_key"], sweep["passes"], sweep["updated_at"])
    if store.settings.backup.schedule:
        report.scheduled_backup = describe_scheduled_backup(
            store.settings.backup.schedule, await pool.fetchrow(query("backup_schedule_state"))
        )
    check: Any = getattr(store.backend, "check", None)
    if check is not None:
        where = getattr(store.backend, "location", store.backend.name)
        try:
            in_pg, in_index = await check(pool)
        except BackendError as exc:
            report.vectors = f"{store.backend.name} at {where}: unavailable: {exc}"
        else:
            report.vectors = f"{store.backend.name} at {where}: {in_index} for {in_pg} memories"
            if in_pg != in_index:
                report.vectors += " (run `amrita-memory index rebuild`)"


def describe_scheduled_backup(schedule: str, row: Any) -> str:
    """``daily@03:00; slot 2026-12-04 03:00 UTC by host:12: ok (amrita_memory_…)``."""
    if row is None or row["last_slot"] is None:
        return f"{schedule}; no slot taken yet"
    slot = f"slot {row['last_slot']:%Y-%m-%d %H:%M} UTC by {row['claimed_by']}"
    if row["finished_at"] is None:
        return f"{schedule}; {slot}: running or interrupted"
    outcome = "ok" if row["ok"] else f"FAILED: {row['error']}"
    return f"{schedule}; {slot}: {outcome} ({row['stem'] or 'no backup'})"


def describe_sweep(sweep: SweepCursor) -> str:
    """``cursor after m_abc…, 3 full passes, moved 2026-12-01 03:00 UTC`` (CLI and web)."""
    if not sweep.cursor and sweep.passes == 0:
        return "not run yet"
    where = f"after {sweep.cursor}" if sweep.cursor else "at the start"
    return (
        f"cursor {where}, {sweep.passes} full passes, moved {sweep.updated_at:%Y-%m-%d %H:%M} UTC"
    )


def render_count_drift(drift: list[tuple[str, int, int]], t: Translator) -> str:
    """The kept row counts' line: exact, or how many partitions differ (the first named)
    and the psql call that repairs them."""
    if not drift:
        return t("status.counts_exact")
    key, kept, actual = drift[0]
    return t("status.counts_drift", n=len(drift), key=key, kept=kept, actual=actual)


def render_status(report: StatusReport, t: Translator) -> str:
    """Plain aligned text in ``t``'s language (the CLI's); each line starts with its label,
    so a script greps the English one (``amrita-memory --lang en status``)."""
    server = report.server
    where = t("status.socket", dir=report.socket_dir) if report.socket_dir else server.target
    kind = t(f"status.kind.{server.kind}")
    lines = [
        t("status.server", kind=kind, version=server.server_version, where=where),
        t("status.pgvector", version=server.pgvector or t("status.pgvector_missing")),
    ]
    if report.revision is None:
        lines.append(t("status.schema_empty", head=report.head))
    elif report.revision == report.head:
        lines.append(t("status.schema_head", revision=report.revision))
    else:
        lines.append(t("status.schema_behind", revision=report.revision, head=report.head))
    if report.counts:
        c = report.counts
        lines.append(t("status.memories", memories=c["memories"], partitions=c["partitions"]))
        lines.append(t("status.memos", memos=c["memos"]))
        lines.append(
            t(
                "status.knowledge",
                entries=c["knowledge"],
                suggestions=c.get("suggestions", 0),
                grants=c.get("grants", 0),
            )
        )
        lines.append(t("status.profiles", profiles=c["profiles"], changes=c["profile_changes"]))
        lines.append(t("status.backend", backend=report.backend))
        if report.vectors:
            lines.append(t("status.vectors", vectors=report.vectors))
    fp = report.fingerprint
    if fp is not None:
        dim = t("status.dim", dim=report.dim) if report.dim else ""
        stored = fp.stored_describe if fp.stored else t("status.unrecorded")
        lines.append(t("status.model_stored", model=stored, dim=dim))
        lines.append(t("status.model_configured", model=fp.current_describe))
        lines.append(t("status.fingerprint", fingerprint=fp.stored or t("status.unrecorded")))
        if fp.rows == 0:
            lines.append(t("status.model_empty"))
        elif fp.reason is None:
            lines.append(t("status.model_same"))
        else:
            lines.append(t("status.model_differs"))
    if report.reindex is not None:
        r = report.reindex
        lines.append(
            t(
                "status.reembed",
                model=r.model or "?",
                staged=r.staged,
                pending=r.pending,
                since=f"{r.started_at:%Y-%m-%d %H:%M}",
            )
        )
    if report.counts:
        if report.key_format == KEY_FORMAT_VERSION:
            lines.append(t("status.keys_current", version=KEY_FORMAT_VERSION))
        else:
            lines.append(t("status.keys_old", version=report.key_format or t("status.unrecorded")))
        if report.by_scope:
            scopes = t("list.sep").join(
                f"{t('scope.' + k)} {v}" for k, v in report.by_scope.items()
            )
            lines.append(t("status.by_scope", counts=scopes))
        if report.by_tier:
            tiers = t("list.sep").join(f"{t('tier.' + k)} {v}" for k, v in report.by_tier.items())
            lines.append(t("status.by_tier", counts=tiers))
        if report.sweep is not None:
            sweep = report.sweep
            if not sweep.cursor and sweep.passes == 0:
                lines.append(t("status.sweep_never"))
            else:
                lines.append(
                    t(
                        "status.sweep",
                        where=t("status.sweep_after", id=sweep.cursor)
                        if sweep.cursor
                        else t("status.sweep_start"),
                        passes=sweep.passes,
                        at=f"{sweep.updated_at:%Y-%m-%d %H:%M}",
                    )
                )
        if report.count_drift is not None:
            lines.append(render_count_drift(report.count_drift, t))
        if report.scheduled_backup:
            lines.append(t("status.scheduled_backup", line=report.scheduled_backup))
        if report.settings is not None:
            lines.append(t("status.loop_model", model=loop_model_status(report.settings, t)))
        if report.partitions:
            total = report.counts.get("partitions", len(report.partitions))
            # say when the list is cut: it showed 10 of 12 as if that were all
            if total > len(report.partitions):
                lines.append(t("status.top_cut", shown=len(report.partitions), total=total))
            else:
                lines.append(t("status.top"))
            lines.extend(f"  {key}: {n}" for key, n in report.partitions)
    if report.backups:
        lines.append("\n" + t("status.backups", n=len(report.backups)))
        for b in report.backups:
            lines.append(
                "  "
                + t(
                    "status.backup_line",
                    stem=b.stem,
                    kb=b.size // 1024,
                    memories=b.counts.get("memory", "?"),
                    reason=b.reason,
                )
            )
    else:
        lines.append("\n" + t("status.no_backups"))
    return "\n".join(lines)
