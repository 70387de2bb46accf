"""Model-change, backup and key commands of ``amrita-memory`` (reference §7.8, fixed).

Each opens the store WITHOUT the start-up check (``open_memory(startup=False)``), so the
commands always work — while the bot runs, and when its fingerprint check refuses.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import click

from amrita_memory_pg.bootstrap import open_store
from amrita_memory_pg.cli.app import CliState, cli, run_async
from amrita_memory_pg.services.leases import LeaseKind, Leases
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage.leases import LeaseRepository


@asynccontextmanager
async def opened(state: CliState) -> AsyncIterator[Store]:
    async with open_store(state.settings) as store:
        yield store


class ProgressBar:
    """``[#####-----]  45%  4500/10000  1234 rows/s  ETA 0:04`` on stderr, redrawn in place."""

    def __init__(self, label: str, width: int = 30) -> None:
        self.label = label
        self.width = width
        self.started = time.monotonic()
        self.last_draw = 0.0
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last_draw < 0.2:
            return
        self.last_draw = now
        elapsed = max(now - self.started, 1e-9)
        rate = done / elapsed
        fraction = done / total if total else 1.0
        filled = int(self.width * fraction)
        eta = (total - done) / rate if rate > 0 else 0.0
        minutes, seconds = divmod(int(eta), 60)
        line = (
            f"\r{self.label} [{'#' * filled}{'-' * (self.width - filled)}] {fraction:4.0%} "
            f"{done}/{total}  {rate:,.0f} rows/s  ETA {minutes}:{seconds:02d}"
        )
        sys.stderr.write(line)
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def fleet_leases(store: Any) -> Leases:
    """This process's claims on the fleet's leases."""
    return Leases(LeaseRepository(store.pool), ttl_seconds=store.settings.database.lease_seconds)


def fleet_lease(store: Any, kind: LeaseKind) -> contextlib.AbstractAsyncContextManager[Any]:
    """The fleet's lease of ``kind``: a re-embed or backup runs in one process
    at a time; held elsewhere = :class:`LeaseHeld`, one line naming the holder, exit 2."""
    return fleet_leases(store).hold(kind)


@cli.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
@run_async
async def reindex(state: CliState, yes: bool) -> None:
    """Re-embed every memory and knowledge entry with the configured model (online, resumable).

    A backup is taken first. New vectors are staged beside the old ones in transactional
    batches (REEMBED_BATCH_SIZE); the bot keeps serving the old ones until one final
    transaction switches. Interrupted? Run it again: it resumes.
    """
    from amrita_memory_pg.maintenance.fingerprint import inspect_fingerprint
    from amrita_memory_pg.maintenance.reembed import change_model, reindex_state
    from amrita_memory_pg.maintenance.reembed import reindex as run_reindex

    async with opened(state) as store, fleet_lease(store, "reembed"):
        status = await inspect_fingerprint(store)
        pending = await reindex_state(store.pool)
        if status.rows == 0:
            click.echo("记忆集合为空，无需重映射（将写入指纹）")
            report = await run_reindex(
                store.pool, store.embedder, batch_size=store.settings.embedding.reembed_batch_size
            )
            click.echo(f"已写入指纹: {report.fingerprint}")
            return
        click.echo(f"将重新嵌入 {status.rows} 条记录（记忆与知识库）")
        click.echo(f"  从: {status.stored_describe}")
        click.echo(f"  到: {status.current_describe}")
        if pending is not None and pending.target_fingerprint == store.embedder.fingerprint:
            click.echo(f"  续跑: 已暂存 {pending.staged} 条，剩余 {pending.pending} 条")
        if not yes:
            click.confirm("确认继续？", default=False, abort=True)
        bar = ProgressBar("  进度")
        try:
            report = await change_model(
                store,
                on_backup=lambda info: click.echo(f"已备份到 {info.jsonl_path}"),
                progress=bar,
            )
        finally:
            bar.close()
    resumed = f"（其中 {report.resumed} 条沿用上次暂存）" if report.resumed else ""
    click.echo(
        f"完成，已重新嵌入 {report.embedded + report.resumed} 条{resumed}；"
        f"记忆 {report.memories} 条、知识 {report.knowledge} 条，维度 {report.dim}"
    )


@cli.command("reset-fingerprint")
@click.pass_obj
@run_async
async def reset_fingerprint(state: CliState) -> None:
    """Record the configured model as the store's, WITHOUT re-embedding (escape hatch)."""
    from amrita_memory_pg.maintenance.reembed import write_fingerprint

    async with opened(state) as store:
        await store.embedder.prepare()
        await write_fingerprint(store.pool, store.embedder)
        click.echo(f"已写入指纹: {store.embedder.fingerprint}")
        click.echo(f"  记录为: {store.embedder.describe()}")
    click.echo("⚠️  未重新嵌入 —— 若模型确实已变更，检索结果将不准确")


@cli.command("migrate-keys")
@click.option("--dry-run", is_flag=True, help="Only count what would change.")
@click.pass_obj
@run_async
async def migrate_keys_command(state: CliState, dry_run: bool) -> None:
    """Convert legacy partition keys (user_{id}, group_{id}) to the current uni_id format."""
    from amrita_memory_pg.maintenance.keys import migrate_keys

    async with opened(state) as store:
        report = await migrate_keys(store.pool, dry_run=dry_run)
    prefix = "[dry-run] 需要改写" if dry_run else "完成，已改写"
    click.echo(f"{prefix} {report.changed_rows} 条记忆、{report.memos_changed} 份备忘录的分区键")
    for old, new in sorted(report.mapping.items()):
        click.echo(f"  {old} -> {new}")
    for key in report.unrecognised:
        click.echo(f"  未识别（保持不变）: {key}")
    for key in report.memo_conflicts:
        click.echo(f"  备忘录冲突（保留新格式的那份）: {key}")
    if report.profiles_changed:
        click.echo(f"  用户画像: {report.profiles_changed} 份（连同修改历史）")
    for key in report.profile_conflicts:
        click.echo(f"  画像冲突（新键已有画像，两份都保持不变）: {key}")


@cli.group()
def backup() -> None:
    """pg_dump + portable JSONL backups of the whole store."""


@backup.command("create")
@click.pass_obj
@run_async
async def backup_create(state: CliState) -> None:
    """Take a backup now (rotation keeps REEMBED_BACKUP_KEEP)."""
    from amrita_memory_pg.maintenance.backup import create_backup

    async with opened(state) as store, fleet_lease(store, "backup"):
        info = await create_backup(store)
    counts = ", ".join(f"{k} {v}" for k, v in info.counts.items())
    click.echo(f"已备份到 {info.jsonl_path}")
    click.echo(f"  pg_dump: {info.dump_path}")
    click.echo(f"  {counts}")


@backup.command("list")
@click.pass_obj
def backup_list(state: CliState) -> None:
    """List backups, oldest first."""
    from amrita_memory_pg.maintenance.backup import list_backups, pinned_backup

    directory = state.settings.resolved_data_dir() / "backups"
    infos = list_backups(directory)
    pinned = pinned_backup(infos)
    if not infos:
        click.echo("无备份")
        return
    click.echo(f"备份（{len(infos)} 份）: {directory}")
    for info in infos:
        when = info.created_at.strftime("%Y-%m-%d %H:%M:%S UTC") if info.created_at else "?"
        click.echo(
            f"  {info.stem}  {info.counts.get('memory', '?')} 条  {when}  {info.size // 1024} KB  {info.reason}"
            + ("  （破坏性操作前的备份，不会被轮换删除）" if info.stem == pinned else "")
        )


@backup.command("verify")
@click.argument("name")
@click.pass_obj
@run_async
async def backup_verify(state: CliState, name: str) -> None:
    """Restore backup NAME (stem or file) into a throwaway database and compare every table.

    The database is created on the same server (needs CREATEDB) and dropped afterwards;
    exit status 1 when a table's rows or checksum differ from what was backed up."""
    from amrita_memory_pg.maintenance.verify import verify_backup

    async with opened(state) as store:
        report = await verify_backup(store, name)
    for kind, found in report.found.items():
        click.echo(f"{kind}: {len(found)} 张表已恢复并比对")
    if report.ok:
        rows = sum(n for n, _ in report.expected.values())
        click.echo(f"备份 {report.backup.stem} 完好: {len(report.expected)} 张表, {rows} 行")
        return
    for problem in report.problems:
        click.echo(f"  {problem}", err=True)
    raise click.ClickException(f"备份 {report.backup.stem} 校验失败（{len(report.problems)} 处）")


@backup.command("scheduled")
@click.option("--force", is_flag=True, help="Take a scheduled backup now, due or not.")
@click.pass_obj
@run_async
async def backup_scheduled(state: CliState, force: bool) -> None:
    """Run the [backup] schedule once (for cron): back up and verify if a slot is due.

    Safe from every host at once: one process of the fleet claims each slot; while a
    restore or another backup holds the fleet's backup lease, the slot waits (exit 0)."""
    from amrita_memory_pg.maintenance.scheduled import run_scheduled_backup

    async with opened(state) as store:
        outcome = await run_scheduled_backup(store, force=force)
    if outcome.slot is None:
        click.echo("未配置 [backup] schedule（--force 可立即备份）")
        return
    if outcome.held_by is not None:
        click.echo(
            f"时段 {outcome.slot.isoformat()} 等待: backup is held by {outcome.held_by}"
            "（恢复或另一次备份进行中），下次检查时再备份"
        )
        return
    if not outcome.claimed:
        click.echo(f"时段 {outcome.slot.isoformat()} 已由其他进程备份或尚未到期")
        return
    if outcome.backup is not None:
        click.echo(f"已备份到 {outcome.backup.jsonl_path}")
    if outcome.verify is not None and outcome.verify.ok:
        click.echo("  校验通过")
    if not outcome.ok:
        raise click.ClickException(f"定时备份失败: {outcome.error}")


@backup.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def backup_delete(state: CliState, name: str, yes: bool) -> None:
    """Delete backup NAME (both files), e.g. a pre-destructive one rotation never removes."""
    from amrita_memory_pg.domain.errors import BackupError
    from amrita_memory_pg.maintenance.backup import delete_backup, find_backup

    directory = state.settings.resolved_data_dir() / "backups"
    try:
        info = find_backup(directory, name)
        if not yes:
            click.confirm(f"删除备份 {info.stem}（{info.reason}）？", default=False, abort=True)
        delete_backup(directory, info.stem)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"已删除 {info.stem}")


@backup.command("restore")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", is_flag=True, help="Allow an empty backup to wipe a non-empty store.")
@click.pass_obj
@run_async
async def backup_restore(state: CliState, file: Path, yes: bool, force: bool) -> None:
    """Restore FILE: our .jsonl/.dump replace the store; the reference plugin's .json is merged.

    Holds the fleet's restore, backup, re-embed and sweep leases, as the admin page's
    restore does: another process holding one = its holder named, exit 2."""
    from amrita_memory_pg.maintenance.restore import restore_held

    path = file.expanduser()
    if not path.is_file() and path.name == str(file):
        # a bare name, as older replies printed it: the store's backups folder
        in_backups = state.settings.resolved_data_dir() / "backups" / path.name
        path = in_backups if in_backups.is_file() else path
    if not path.is_file():
        raise click.ClickException(f"备份文件不存在: {path}")
    if not yes:
        question = (
            f"把旧插件的备份 {path.name} 合并进当前记忆？（已有的记忆与备忘录保持不变，会先自动备份）"
            if path.suffix == ".json"
            else f"用 {path.name} 替换当前全部记忆？（会先自动备份当前数据）"
        )
        click.confirm(question, default=False, abort=True)
    async with opened(state) as store:
        report = await restore_held(store, fleet_leases(store), path, force=force)
    if report.safety_backup is not None:
        click.echo(f"恢复前已备份到 {report.safety_backup.jsonl_path}")
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
    click.echo(f"完成，已从 {path.name} 恢复: {counts}")
    if report.kind == "reference-json":
        click.echo(f"  合并: 新增 {report.merged} 条，已存在而保留 {report.kept_existing} 条")
        for key, n in sorted(report.overflow.items()):
            limit = state.settings.per_session_memory_limit
            click.echo(f"  超出每分区上限 {limit}，未导入（最旧的）: {key} {n} 条")
        if report.skipped:
            click.echo(f"  跳过 {report.skipped} 条（无法识别的分区键或空文本）")
    if report.reembedded:
        click.echo(f"  已用当前模型重新嵌入 {report.reembedded} 条")
    if report.keys_migrated:
        click.echo(f"  已改写 {report.keys_migrated} 条记忆的分区键")
