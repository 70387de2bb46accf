"""``amrita-memory``: operate the memory store from a shell.

Every command works while the bot runs (they share the embedded server when there is
no ``DATABASE_URL``) and never blocks on the start-up fingerprint check. Errors of our
own print one sentence and exit with status 2; nothing prints a traceback unless
``--debug`` is given.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import click

from amrita_memory_pg.cli.app import (
    CliState,
    chosen_language,
    cli,
    language,
    run_async,
    say,
    set_language,
    tr,
)
from amrita_memory_pg.domain.errors import AmritaMemoryError
from amrita_memory_pg.settings import redacted_dump, render_reference

if TYPE_CHECKING:
    from amrita_memory_pg.settings import Settings
    from amrita_memory_pg.storage.chroma import ChromaBackend
    from amrita_memory_pg.storage.pg.database import Database


# ---------------------------------------------------------------------------- db


@cli.group()
def db() -> None:
    """Schema migrations (alembic, version table in the amrita_memory schema)."""


@db.command("upgrade")
@click.argument("revision", default="head")
@click.pass_obj
@run_async
async def db_upgrade(state: CliState, revision: str) -> None:
    """Upgrade the schema to REVISION (default: head)."""
    from amrita_memory_pg.storage.pg import migrate
    from amrita_memory_pg.storage.pg.database import check_pgvector, connect_once, resolve_target

    settings = state.settings
    problem = migrate.revision_problem(revision)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="REVISION")
    target = await resolve_target(settings)
    try:
        conn = await connect_once(target.dsn, settings.database.connect_timeout)
        try:
            await check_pgvector(conn)
            before = await migrate.current_revision(conn)
        finally:
            await conn.close()
        await migrate.upgrade(target.dsn, revision)
        conn = await connect_once(target.dsn, settings.database.connect_timeout)
        try:
            after = await migrate.current_revision(conn)
        finally:
            await conn.close()
    finally:
        target.release()
    if before == after:
        say("cli.db.already", revision=after)
    else:
        say("cli.db.upgraded", before=before or tr("cli.db.empty"), after=after)


@db.command("downgrade")
@click.argument("revision")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
@run_async
async def db_downgrade(state: CliState, revision: str, yes: bool) -> None:
    """Downgrade the schema to REVISION (`base` drops every table of ours: data is lost)."""
    from amrita_memory_pg.storage.pg import migrate
    from amrita_memory_pg.storage.pg.database import connect_once, resolve_target

    settings = state.settings
    problem = migrate.revision_problem(revision)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="REVISION")
    if not yes:
        click.confirm(tr("cli.db.confirm_downgrade", revision=revision), abort=True)
    target = await resolve_target(settings)
    try:
        await migrate.downgrade(target.dsn, revision)
        conn = await connect_once(target.dsn, settings.database.connect_timeout)
        try:
            after = await migrate.current_revision(conn)
        finally:
            await conn.close()
    finally:
        target.release()
    say("cli.db.now", revision=after or tr("cli.db.empty"))


@db.command("stop")
@click.pass_obj
def db_stop(state: CliState) -> None:
    """Stop the embedded server if no running process uses it.

    The last process that uses the embedded server stops it when it exits, so this is
    only needed after every user was killed (kill -9). A server that a live process
    still uses is left alone: that process supervises it and would start it again at
    once. Stop the bot first; this exits with status 1 and names it.
    """
    from amrita_memory_pg.storage.pg.embedded import stop_cluster

    settings = state.settings
    if settings.database.url:
        raise click.ClickException(tr("cli.db.external"))
    pgdata = settings.resolved_data_dir() / "pg"
    result = stop_cluster(settings.resolved_data_dir())
    if result.users:
        pids = ", ".join(str(pid) for pid in result.users)
        say("cli.db.in_use", pgdata=pgdata, pids=pids)
        sys.exit(1)
    if result.pid is None:
        say("cli.db.not_running", pgdata=pgdata)
    elif result.stopped:
        say("cli.db.stopped", pgdata=pgdata, pid=result.pid)
    else:
        raise click.ClickException(tr("cli.db.did_not_stop", pgdata=pgdata))


@db.command("current")
@click.pass_obj
@run_async
async def db_current(state: CliState) -> None:
    """Print the schema revision of the database and the head of this code."""
    from amrita_memory_pg.storage.pg import migrate
    from amrita_memory_pg.storage.pg.database import connect_once, resolve_target

    settings = state.settings
    target = await resolve_target(settings)
    try:
        conn = await connect_once(target.dsn, settings.database.connect_timeout)
        try:
            current = await migrate.current_revision(conn)
        finally:
            await conn.close()
    finally:
        target.release()
    head = migrate.head_revision()
    shown = current or tr("cli.db.empty")
    if current == head:
        say("cli.db.current_head", revision=shown)
    elif problem := migrate.unsupported_revision(current):
        say("cli.db.current_unsupported", revision=shown, problem=problem)
    else:
        say("cli.db.current_behind", revision=shown, head=head)


# ---------------------------------------------------------------------------- status


@cli.command()
@click.pass_obj
@run_async
async def status(state: CliState) -> None:
    """Server, pgvector, schema revision and row counts."""
    from amrita_memory_pg.bootstrap import open_store
    from amrita_memory_pg.maintenance.status import (
        collect_server_status,
        collect_store_status,
        render_status,
    )
    from amrita_memory_pg.storage.pg.database import resolve_target

    settings = state.settings
    target = await resolve_target(settings)
    try:
        report = await collect_server_status(settings, target)
        if report.revision == report.head:
            async with open_store(settings) as store:
                await collect_store_status(store, report)
    finally:
        target.release()
    click.echo(render_status(report, tr))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.pass_obj
def health(state: CliState, as_json: bool) -> None:
    """Exit 0 when the database answers, its schema is at head and the stored vectors are
    the configured model's; exit 1 otherwise, naming the check that failed (a container's
    health check: Docker's HEALTHCHECK, a Kubernetes exec probe). Never starts the
    embedded server; never loads the model."""
    from amrita_memory_pg.maintenance.health import Check, Health, server_health

    try:
        report = asyncio.run(server_health(state.settings))
    except AmritaMemoryError as exc:  # a broken configuration is unhealthy, not exit 2
        report = Health((Check("config", False, "health.unreachable", {"reason": str(exc)}),))
    if as_json:
        click.echo(report.as_json(tr))
    else:
        for check in report.checks:
            say(
                "cli.health.line",
                mark=tr("cli.health.ok" if check.ok else "cli.health.fail"),
                check=tr(f"health.check.{check.name}"),
                detail=check.detail(tr),
            )
    sys.exit(0 if report.ok else 1)


# ---------------------------------------------------------------------------- tokens


@cli.group()
def tokens() -> None:
    """Search tokens of the memories and the knowledge base (the keyword side of hybrid search)."""


@tokens.command("backfill")
@click.option(
    "--all", "everything", is_flag=True, help="Recompute every memory's and entry's tokens."
)
@click.option("--batches", type=click.IntRange(min=1), default=None, help="Stop after N batches.")
@click.pass_obj
@run_async
async def tokens_backfill(state: CliState, everything: bool, batches: int | None) -> None:
    """Give memories and knowledge entries without search tokens their tokens (also run at
    startup and after a restore); --all recomputes them all, after the token rules
    changed. Resumable."""
    from amrita_memory_pg.bootstrap import open_memory
    from amrita_memory_pg.cli.ops import ProgressBar
    from amrita_memory_pg.maintenance.tokens import backfill_tokens

    bar = ProgressBar(tr("cli.progress.label"))
    async with open_memory(state.settings, startup=False) as mem:
        try:
            report = await backfill_tokens(
                mem.pool, retokenize=everything, max_batches=batches, progress=bar
            )
        finally:
            bar.close()
    say("cli.tokens.memories", done=report.tokenized, left=report.remaining)
    say("cli.tokens.knowledge", done=report.knowledge_tokenized, left=report.knowledge_remaining)


# ---------------------------------------------------------------------------- sweep


@cli.command()
@click.option("--dry-run", is_flag=True, help="Only report what would change.")
@click.option("--batches", type=click.IntRange(min=1), default=None, help="Stop after N batches.")
@click.option("--force", is_flag=True, help="Run even when [decay] disables the sweep.")
@click.pass_obj
@run_async
async def sweep(state: CliState, dry_run: bool, batches: int | None, force: bool) -> None:
    """Demote memories past their tier lifetime and purge low ones (reference §5.2).

    One run is a full pass from the persisted cursor round to it again, in batches of
    [decay] sweep_batch_limit rows, each batch its own transaction.
    """
    from amrita_memory_pg.bootstrap import open_memory

    settings = state.settings
    decay = settings.decay
    if not force and not (decay.enabled and decay.sweep_enabled):
        say("cli.sweep.disabled")
        return
    from amrita_memory_pg.cli.ops import ProgressBar
    from amrita_memory_pg.storage.memories import count_all

    bar = ProgressBar(tr("cli.progress.label"))
    async with open_memory(settings, startup=False) as mem:
        # the bar's total: the rows now (a full pass scans each once; a row written
        # meanwhile may add one)
        total = await count_all(mem.pool)

        def progress(scanned: int) -> None:
            bar(scanned, total)

        try:
            if dry_run:
                report = await mem.memories.sweep(
                    dry_run=True, max_batches=batches, force=force, progress=progress
                )
            else:
                # one sweep across the fleet: held elsewhere = LeaseHeld, exit 2
                async with mem.leases.hold("sweep"):
                    report = await mem.memories.sweep(
                        max_batches=batches, force=force, progress=progress
                    )
        finally:
            bar.close()
    clock = tr(
        "cli.sweep.clock_restarts" if decay.restart_clock_on_demote else "cli.sweep.clock_keeps"
    )
    counts = {
        "scanned": report.scanned,
        "demoted": report.demoted,
        "purged": report.purged,
        "kept": report.kept,
    }
    partial = "" if report.wrapped or dry_run else tr("cli.sweep.partial")
    click.echo(tr("cli.sweep.dry" if dry_run else "cli.sweep.done", **counts) + partial)
    from amrita_memory_pg.domain.decay import tier_days

    low, medium, high = (
        tier_days(level, decay.short_term_days, decay.long_term_days) for level in (3, 5, 8)
    )
    say(
        "cli.sweep.lifetimes", low=f"{low:g}", medium=f"{medium:.1f}", high=f"{high:g}", clock=clock
    )


@cli.command("ann-index")
@click.pass_obj
@run_async
async def ann_index(state: CliState) -> None:
    """Build (or drop) the partial HNSW indexes of large partitions ([retrieval] ann_min_rows),
    each such partition's keyword (GIN) index, and with [injection] enabled their and
    global's memory block index."""
    from amrita_memory_pg.maintenance.ann import HNSW_MAX_DIM, maintain_configured
    from amrita_memory_pg.storage.pg.database import Database

    settings = state.settings
    database = await Database.open(settings)
    try:
        report = await maintain_configured(database.pool, settings)
    finally:
        await database.close()
    say(
        "cli.ann.summary",
        built=len(report.built),
        dropped=len(report.dropped),
        kept=len(report.kept),
    )
    for name in report.built:
        click.echo(f"  + {name}")
    for name in report.dropped:
        click.echo(f"  - {name}")
    say("cli.ann.keyword", built=len(report.keyword_built), dropped=len(report.keyword_dropped))
    for name in report.keyword_built:
        click.echo(f"  + {name}")
    for name in report.keyword_dropped:
        click.echo(f"  - {name}")
    say("cli.ann.block", built=len(report.block_built), dropped=len(report.block_dropped))
    for name in report.block_built:
        click.echo(f"  + {name}")
    for name in report.block_dropped:
        click.echo(f"  - {name}")
    for partition in report.too_wide:
        say("cli.ann.too_wide", partition=partition, most=HNSW_MAX_DIM)


# ---------------------------------------------------------------------------- vector index


@cli.group()
def index() -> None:
    """The chroma vector index: compare it with PostgreSQL, rebuild it from PostgreSQL."""


async def _open_chroma(settings: Settings) -> tuple[Database, ChromaBackend] | None:
    """(database, ChromaBackend) when the chroma backend is configured, else None."""
    if settings.vector_backend != "chroma":
        say("cli.index.not_chroma", backend=settings.vector_backend)
        return None
    from amrita_memory_pg.bootstrap import create_backend
    from amrita_memory_pg.storage.chroma import ChromaBackend
    from amrita_memory_pg.storage.pg.database import Database

    chroma = create_backend(settings)
    assert isinstance(chroma, ChromaBackend)
    try:
        database = await Database.open(settings)
    except BaseException:
        await chroma.aclose()
        raise
    return database, chroma


@index.command("check")
@click.pass_obj
@run_async
async def index_check(state: CliState) -> None:
    """Count memories in PostgreSQL and vectors in chroma; exit status 1 when they differ."""
    opened = await _open_chroma(state.settings)
    if opened is None:
        return
    database, chroma = opened
    try:
        in_pg, in_chroma = await chroma.check(database.pool)
    finally:
        await chroma.aclose()
        await database.close()
    say("cli.index.counts", location=chroma.location, vectors=in_chroma, memories=in_pg)
    if in_pg != in_chroma:
        say("cli.index.out_of_step")
        sys.exit(1)


@index.command("rebuild")
@click.option(
    "--batch-size", type=click.IntRange(min=1, max=5000), default=500, help="Rows per upsert."
)
@click.pass_obj
@run_async
async def index_rebuild(state: CliState, batch_size: int) -> None:
    """Drop the chroma collection and refill it from PostgreSQL (after a re-embed, or to recover)."""
    opened = await _open_chroma(state.settings)
    if opened is None:
        return
    database, chroma = opened
    try:
        count = await chroma.rebuild(database.pool, batch_size=batch_size)
    finally:
        await chroma.aclose()
        await database.close()
    say(
        "cli.index.rebuilt",
        collection=repr(chroma.config.collection),
        location=chroma.location,
        vectors=count,
    )


# ---------------------------------------------------------------------------- psql


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def psql(state: CliState, psql_args: tuple[str, ...]) -> None:
    """Open psql on the configured database (the embedded one included).

    Extra arguments go to psql, e.g. `amrita-memory psql -c "SELECT * FROM amrita_memory.partition_usage"`.
    """
    import shutil

    from amrita_memory_pg.storage.pg.database import resolve_target
    from amrita_memory_pg.storage.pg.embedded import bin_path

    settings = state.settings
    target = asyncio.run(resolve_target(settings))
    try:
        try:
            program = str(bin_path("psql"))
        except AmritaMemoryError:
            found = shutil.which("psql")
            if found is None:
                raise
            program = found
        from amrita_memory_pg.storage.pg.libpq import child_process_args

        # The password goes to psql as PGPASSWORD, not on its (public) command line.
        argv, env = child_process_args([program, *psql_args, target.dsn])
        code = subprocess.call(argv, env=env)
    finally:
        target.release()
    sys.exit(code)


# ---------------------------------------------------------------------------- config


@cli.group()
def config() -> None:
    """Inspect the configuration."""


@config.command("docs")
def config_docs() -> None:
    """Print the configuration reference (every key, default, allowed values, env var)."""
    click.echo(render_reference(), nl=False)


@config.command("show")
@click.pass_obj
def config_show(state: CliState) -> None:
    """Print the effective configuration as JSON (secrets masked, DSNs redacted)."""
    import json

    click.echo(json.dumps(redacted_dump(state.settings), indent=2, ensure_ascii=False))


# ---------------------------------------------------------------------------- entry point


def _register_commands() -> None:
    """Commands living in sibling modules attach themselves to ``cli`` on import."""
    import amrita_memory_pg.cli.consolidate
    import amrita_memory_pg.cli.forget
    import amrita_memory_pg.cli.knowledge
    import amrita_memory_pg.cli.legacy
    import amrita_memory_pg.cli.memories
    import amrita_memory_pg.cli.ops
    import amrita_memory_pg.cli.profile
    import amrita_memory_pg.cli.trail
    import amrita_memory_pg.cli.web  # noqa: F401


#: the start of the last-resort line for an error no command handled, in each language
#: (a bug to fix: the CLI fuzz test fails when it appears)
INTERNAL_ERROR = ("amrita-memory: internal error", "amrita-memory: 内部错误")


def _refuse_unstorable(args: list[str]) -> None:
    """The CLI edge of the one validation: an argument the database cannot store (a NUL,
    or bytes the terminal could not decode, which Python hands over as lone
    surrogates) is refused before any command runs."""
    from amrita_memory_pg.domain.validation import echo, text_refusal

    for number, arg in enumerate(args, start=1):
        refused = text_refusal(arg)
        if refused is not None:
            problem = refused.said(language())
            say("cli.bad_argument", number=number, value=echo(arg), problem=problem, err=True)
            sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: our errors become one line on stderr and exit status 2."""
    _register_commands()
    args = list(argv if argv is not None else sys.argv[1:])
    # before click parses anything: its help and its own messages are in it too
    set_language(chosen_language(args, os.environ), cli)
    debug = "--debug" in args
    _refuse_unstorable(args)
    try:
        cli.main(args=argv, prog_name="amrita-memory", standalone_mode=False)
    except click.exceptions.Abort:
        say("cli.aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except AmritaMemoryError as exc:
        if debug:
            raise
        say("cli.error", message=exc, err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        say("cli.interrupted", err=True)
        sys.exit(130)
    except UnicodeDecodeError as exc:  # a file an operator named is not text we can read
        if debug:
            raise
        from amrita_memory_pg.domain.validation import not_utf8

        say("cli.error", message=not_utf8(tr("cli.a_file"), exc), err=True)
        sys.exit(2)
    except OSError as exc:  # a file or folder the operator named or configured
        if debug:
            raise
        from amrita_memory_pg.domain.validation import echo

        where = f" ({echo(str(exc.filename), 120)})" if exc.filename else ""
        say("cli.error", message=f"{exc.strerror or exc}{where}", err=True)
        sys.exit(2)
    except Exception as exc:  # the outermost edge: a sentence, never a traceback
        if debug:
            raise
        logging.getLogger(__name__).debug("unhandled", exc_info=True)
        say("cli.internal_error", error=f"{type(exc).__name__}: {str(exc)[:300]}", err=True)
        sys.exit(70)


if __name__ == "__main__":  # pragma: no cover
    main()
