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
from amrita_memory_pg.cli.app import CliState, cli, run_async, say, table_counts, tr
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
        total = max(total, done)  # rows written meanwhile
        if done < total and now - self.last_draw < 0.2:
            return
        self.last_draw = now
        elapsed = max(now - self.started, 1e-9)
        rate = done / elapsed
        fraction = done / total if total else 1.0
        filled = int(self.width * fraction)
        eta = (total - done) / rate if rate > 0 else 0.0
        minutes, seconds = divmod(int(eta), 60)
        line = "\r" + tr(
            "cli.progress",
            label=self.label,
            bar="#" * filled + "-" * (self.width - filled),
            percent=fraction,
            done=done,
            total=total,
            rate=rate,
            eta=f"{minutes}:{seconds:02d}",
        )
        sys.stderr.write(line)
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


class PhaseBars:
    """A :class:`ProgressBar` per phase of a long walk, for callbacks of the form (phase,
    done, total): a backup's export, a restore's validation, load and tokens. A phase in
    ``waits`` (pg_dump, psql replaying a dump: no rows to count) prints its label once."""

    def __init__(self, bars: dict[str, str], waits: dict[str, str] | None = None) -> None:
        self.bars = bars
        self.waits = waits or {}
        self.phase: str | None = None
        self.bar: ProgressBar | None = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase != self.phase:
            self.close()
            self.phase = phase
            if phase in self.waits:
                sys.stderr.write(f"{self.waits[phase]} …\n")
                sys.stderr.flush()
            elif phase in self.bars:
                self.bar = ProgressBar(self.bars[phase])
        if self.bar is not None:
            self.bar(done, total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


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
            say("cli.reindex.empty")
            report = await run_reindex(
                store.pool, store.embedder, batch_size=store.settings.embedding.reembed_batch_size
            )
            say("cli.reindex.recorded", fingerprint=report.fingerprint)
            return
        say("cli.reindex.plan", rows=status.rows)
        say("cli.reindex.from", model=status.stored_describe)
        say("cli.reindex.to", model=status.current_describe)
        if pending is not None and pending.target_fingerprint == store.embedder.fingerprint:
            say("cli.reindex.resume", staged=pending.staged, pending=pending.pending)
        if not yes:
            click.confirm(tr("cli.reindex.confirm"), default=False, abort=True)
        bar = ProgressBar(tr("cli.progress.label"))
        try:
            report = await change_model(
                store,
                on_backup=lambda info: say("cli.reindex.backed_up", path=info.jsonl_path),
                progress=bar,
            )
        finally:
            bar.close()
    resumed = tr("cli.reindex.resumed", n=report.resumed) if report.resumed else ""
    say(
        "cli.reindex.done",
        rows=report.embedded + report.resumed,
        resumed=resumed,
        memories=report.memories,
        knowledge=report.knowledge,
        dim=report.dim,
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
        say("cli.reindex.recorded", fingerprint=store.embedder.fingerprint)
        say("cli.reset.recorded_as", model=store.embedder.describe())
    say("cli.reset.warning")


@cli.command("migrate-keys")
@click.option("--dry-run", is_flag=True, help="Only count what would change.")
@click.pass_obj
@run_async
async def migrate_keys_command(state: CliState, dry_run: bool) -> None:
    """Convert legacy partition keys (user_{id}, group_{id}) to the current uni_id format."""
    from amrita_memory_pg.maintenance.keys import migrate_keys

    async with opened(state) as store:
        report = await migrate_keys(store.pool, dry_run=dry_run)
    say(
        "cli.keys.dry" if dry_run else "cli.keys.done",
        rows=report.changed_rows,
        memos=report.memos_changed,
    )
    for old, new in sorted(report.mapping.items()):
        click.echo(f"  {old} -> {new}")
    for key in report.unrecognised:
        say("cli.keys.unknown", key=key)
    for key in report.memo_conflicts:
        say("cli.keys.memo_conflict", key=key)
    if report.profiles_changed:
        say("cli.keys.profiles", n=report.profiles_changed)
    for key in report.profile_conflicts:
        say("cli.keys.profile_conflict", key=key)


@cli.group()
def backup() -> None:
    """pg_dump + portable JSONL backups of the whole store."""


@backup.command("create")
@click.pass_obj
@run_async
async def backup_create(state: CliState) -> None:
    """Take a backup now (rotation keeps REEMBED_BACKUP_KEEP)."""
    from amrita_memory_pg.maintenance.backup import create_backup

    bars = PhaseBars({"export": tr("cli.progress.export")}, waits={"dump": tr("cli.progress.dump")})
    async with opened(state) as store, fleet_lease(store, "backup"):
        try:
            info = await create_backup(store, progress=bars)
        finally:
            bars.close()
    say("cli.backup.done", path=info.jsonl_path)
    say("cli.backup.dump", path=info.dump_path)
    say("cli.backup.counts", counts=table_counts(info.counts))


@backup.command("list")
@click.pass_obj
def backup_list(state: CliState) -> None:
    """List backups, oldest first."""
    from amrita_memory_pg.maintenance.backup import list_backups, pinned_backup

    directory = state.settings.resolved_data_dir() / "backups"
    infos = list_backups(directory)
    pinned = pinned_backup(infos)
    if not infos:
        say("cli.backup.none")
        return
    say("cli.backup.list_head", n=len(infos), directory=directory)
    for info in infos:
        when = info.created_at.strftime("%Y-%m-%d %H:%M:%S UTC") if info.created_at else "?"
        say(
            "cli.backup.row",
            stem=info.stem,
            memories=info.counts.get("memory", "?"),
            when=when,
            kb=info.size // 1024,
            reason=info.reason,
            pinned=tr("cli.backup.pinned") if info.stem == pinned else "",
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
        say("cli.verify.kind", kind=kind, n=len(found))
    if report.ledger:
        say(
            "cli.verify.ledger",
            n=len(report.ledger),
            kinds=tr("list.sep").join(sorted({kind for kind, _n in report.ledger.values()})),
            rows=sum(n for _kind, n in report.ledger.values()),
        )
    else:
        say("cli.verify.ledger_clean", n=report.ledger_entries)
    if report.ok:
        rows = sum(n for n, _ in report.expected.values())
        say("cli.verify.ok", stem=report.backup.stem, tables=len(report.expected), rows=rows)
        return
    for problem in report.problems:
        say("cli.verify.problem", problem=problem, err=True)
    raise click.ClickException(
        tr("cli.verify.failed", stem=report.backup.stem, n=len(report.problems))
    )


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
        say("cli.scheduled.none")
        return
    if outcome.held_by is not None:
        say("cli.scheduled.held", slot=outcome.slot.isoformat(), holder=outcome.held_by)
        return
    if not outcome.claimed:
        say("cli.scheduled.taken", slot=outcome.slot.isoformat())
        return
    if outcome.backup is not None:
        say("cli.backup.done", path=outcome.backup.jsonl_path)
    if outcome.verify is not None and outcome.verify.ok:
        say("cli.scheduled.verified")
    if not outcome.ok:
        raise click.ClickException(tr("cli.scheduled.failed", error=outcome.error))


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
            click.confirm(
                tr("cli.backup.confirm_delete", stem=info.stem, reason=info.reason),
                default=False,
                abort=True,
            )
        delete_backup(directory, info.stem)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    say("cli.backup.deleted", stem=info.stem)


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
        raise click.ClickException(tr("cli.restore.missing", path=path))
    if not yes:
        question = tr(
            "cli.restore.confirm_merge"
            if path.suffix == ".json"
            else "cli.restore.confirm_replace",
            name=path.name,
        )
        click.confirm(question, default=False, abort=True)
    bars = PhaseBars(
        {
            "validate": tr("cli.progress.validate"),
            "load": tr("cli.progress.load"),
            "tokens": tr("cli.progress.tokens"),
        },
        waits={"replay": tr("cli.progress.replay")},
    )
    async with opened(state) as store:
        try:
            report = await restore_held(
                store, fleet_leases(store), path, force=force, progress=bars
            )
        finally:
            bars.close()
    if report.safety_backup is not None:
        say("cli.restore.safety", path=report.safety_backup.jsonl_path)
    say("cli.restore.done", name=path.name, counts=table_counts(report.counts))
    if report.kind == "reference-json":
        say("cli.restore.merged", added=report.merged, kept=report.kept_existing)
        for key, n in sorted(report.overflow.items()):
            limit = state.settings.per_session_memory_limit
            say("cli.restore.overflow", limit=limit, key=key, n=n)
        if report.skipped:
            say("cli.restore.skipped", n=report.skipped)
    if report.reembedded:
        say("cli.restore.reembedded", n=report.reembedded)
    if report.keys_migrated:
        say("cli.restore.keys", n=report.keys_migrated)
