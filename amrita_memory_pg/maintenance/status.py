"""What ``amrita-memory status`` gathers and how it prints it (a web page can use both)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from amrita_memory_pg.domain.errors import BackendError
from amrita_memory_pg.domain.keys import KEY_FORMAT_VERSION
from amrita_memory_pg.maintenance.backup import BackupInfo, list_backups
from amrita_memory_pg.maintenance.fingerprint import FingerprintStatus, inspect_fingerprint
from amrita_memory_pg.maintenance.reembed import ReindexState, reindex_state
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.settings import LOOP_MODEL_HOWTO, Settings, loop_endpoint_label
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import (
    ServerInfo,
    ServerTarget,
    connect_once,
    server_info,
)
from amrita_memory_pg.storage.queries import query

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
    #: ``[backup] schedule`` and how its last claimed slot ended ("" = no schedule)
    scheduled_backup: str = ""
    #: the model an L3 cycle uses, as far as the settings tell (:func:`loop_model_status`)
    loop_model: str = ""


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
        loop_model=loop_model_status(settings),
    )
    return report


def loop_model_status(settings: Settings) -> str:
    """The L3 loop's model in one phrase, from the settings alone: the host's preset is
    looked up in the bot process (``/memory dmn`` names it), not here."""
    if not settings.subconscious.enabled:
        return "未启用（[subconscious] enabled = false）"
    sub = settings.subconscious
    configured = loop_endpoint_label(settings)
    if sub.llm_base_url or sub.llm_model:
        return configured or f"未配置：{LOOP_MODEL_HOWTO}"
    otherwise = f" {configured}" if configured else f"未配置：{LOOP_MODEL_HOWTO}"
    return f"在 AmritaBot 中为它的模型预设（机器人进程中查找，/memory dmn 显示），否则{otherwise}"


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


def render_status(report: StatusReport) -> str:
    """Plain aligned text; the first column is stable for scripts that grep it."""
    server = report.server
    where = f"socket {report.socket_dir}" if report.socket_dir else server.target
    lines = [
        f"server:      {server.kind} PostgreSQL {server.server_version} ({where})",
        f"pgvector:    {server.pgvector or 'not installed in this database'}",
    ]
    if report.revision is None:
        lines.append(f"schema:      empty (head is {report.head}: run `amrita-memory db upgrade`)")
    elif report.revision == report.head:
        lines.append(f"schema:      {report.revision} (head)")
    else:
        lines.append(
            f"schema:      {report.revision} (head is {report.head}: run `amrita-memory db upgrade`)"
        )
    if report.counts:
        c = report.counts
        lines.append(f"memories:    {c['memories']} in {c['partitions']} partitions")
        lines.append(f"memos:       {c['memos']}")
        lines.append(
            f"knowledge:   {c['knowledge']} entries, {c.get('suggestions', 0)} suggestions "
            f"pending, {c.get('grants', 0)} grants"
        )
        lines.append(f"profiles:    {c['profiles']} ({c['profile_changes']} changes kept)")
        lines.append(f"backend:     {report.backend}")
        if report.vectors:
            lines.append(f"vectors:     {report.vectors}")
    fp = report.fingerprint
    if fp is not None:
        lines.append(
            f"库中记录:    {fp.stored_describe}" + (f"  dim {report.dim}" if report.dim else "")
        )
        lines.append(f"当前配置:    {fp.current_describe}")
        lines.append(f"指纹:        {fp.stored or '（无记录）'}")
        if fp.rows == 0:
            lines.append("状态:        空集合（无需重映射，下次启动会写入指纹）")
        elif fp.reason is None:
            lines.append("状态:        ✅ 一致")
        else:
            lines.append(f"状态:        ⚠️  不一致 —— 需运行 `amrita-memory reindex`（{fp.reason}）")
    if report.reindex is not None:
        r = report.reindex
        lines.append(
            f"re-embed:    in progress toward {r.model or '?'}: {r.staged} staged, {r.pending} pending "
            f"(since {r.started_at:%Y-%m-%d %H:%M} UTC; run `amrita-memory reindex` to finish)"
        )
    if report.counts:
        if report.key_format == KEY_FORMAT_VERSION:
            lines.append(f"分区键版本:  {KEY_FORMAT_VERSION}（最新）")
        else:
            lines.append(
                f"分区键版本:  {report.key_format or '（无记录）'} → 需迁移（amrita-memory migrate-keys）"
            )
        if report.by_scope:
            lines.append(
                "by scope:    " + ", ".join(f"{k} {v}" for k, v in report.by_scope.items())
            )
        if report.by_tier:
            lines.append("by tier:     " + ", ".join(f"{k} {v}" for k, v in report.by_tier.items()))
        if report.sweep is not None:
            lines.append(f"sweep:       {describe_sweep(report.sweep)}")
        if report.scheduled_backup:
            lines.append(f"定时备份:    {report.scheduled_backup}")
        if report.loop_model:
            lines.append(f"L3 model:    {report.loop_model}")
        if report.partitions:
            total = report.counts.get("partitions", len(report.partitions))
            # say when the list is cut: it showed 10 of 12 as if that were all
            cut = (
                f"（最大的 {len(report.partitions)} 个，共 {total} 个分区；"
                "全部分区见管理页 amrita-memory web）"
                if total > len(report.partitions)
                else ""
            )
            lines.append(f"分布:{cut}")
            lines.extend(f"  {key}: {n}" for key, n in report.partitions)
    if report.backups:
        lines.append(f"\n备份（{len(report.backups)} 份）:")
        for b in report.backups:
            lines.append(
                f"  {b.stem}  ({b.size // 1024} KB)  {b.counts.get('memory', '?')} 条  {b.reason}"
            )
    else:
        lines.append("\n备份: 无")
    return "\n".join(lines)
