"""``amrita-memory import-legacy``: move in from an amrita_plugin_memory installation.

Non-destructive on both sides: the old directory is only read, and the store keeps
everything it holds (``--on-conflict`` decides only for ids present on both sides).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from amrita_memory_pg.cli.app import CliState, cli, run_async, say, tr


class _Bar:
    """click.progressbar on stderr, created when the total is known."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Any = None
        self.shown = 0

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if total == 0:
                return
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.shown)
        self.shown = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _refuse_another_bots_env(state: CliState, data_dir: Path) -> None:
    """Refuse when the old bot's folder has a ``.env`` this command did not read.

    The bot reads its ``.env``; an import run elsewhere embeds with another model and
    the bot then refuses to start.
    """
    bot_dir = data_dir.parent.parent
    env_file = bot_dir / ".env"
    if env_file.is_file() and env_file.resolve() not in {p.resolve() for p in state.bot_env.files}:
        raise click.ClickException(
            tr("cli.legacy.other_env", env=env_file, cwd=Path.cwd(), bot=bot_dir, data=data_dir)
        )


@cli.command("import-legacy")
@click.argument("old_data_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
# OLD_DATA_DIR may also be the bot's folder: data/amrita_plugin_memory is found below it.
@click.option(
    "--db",
    "db",
    default=None,
    help="The old plugin's database: a SQLite file, sqlite:/// or postgresql:// URL "
    "(default: nonebot-plugin-orm's data/nonebot_plugin_orm/db.sqlite3).",
)
@click.option("--dry-run", is_flag=True, help="Read and report; write nothing.")
@click.option(
    "--on-conflict",
    type=click.Choice(["skip", "replace"]),
    default="skip",
    show_default=True,
    help="A memory id or memo already in the store: keep ours (skip) or take the old one.",
)
@click.option(
    "--legacy-config",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="The old config.toml (default: config/amrita_plugin_memory/config.toml of the bot dir).",
)
@click.option(
    "--chroma-dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="The old Chroma persist directory (default: OLD_DATA_DIR/vector_db.chroma), "
    "e.g. a copy of a remote server's.",
)
@click.option(
    "--write-config",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write the translated config to this file (never overwrites one).",
)
@click.pass_obj
@run_async
async def import_legacy_command(
    state: CliState,
    old_data_dir: Path,
    db: str | None,
    dry_run: bool,
    on_conflict: str,
    legacy_config: Path | None,
    chroma_dir: Path | None,
    write_config: Path | None,
) -> None:
    """Merge an amrita_plugin_memory installation (OLD_DATA_DIR = the bot folder or its
    data/amrita_plugin_memory). Run it in the bot folder: it reads the bot's .env.

    Imports the memories (Chroma; vectors reused when the model is the same), the memos
    (SQL table), the knowledge base, the user profile and the L3 state (with its pending
    messages and knowledge suggestions); translates the old config.toml and prints it
    for review; names the old L3 prompt templates (not imported). Existing rows are kept;
    the per-partition cap is respected; a second run changes nothing; a killed run resumes
    when started again. Exit status 1 when anything was skipped, did not fit under the
    cap or could not be read (each listed), 0 when everything came over.
    """
    from amrita_memory_pg.bootstrap import open_store
    from amrita_memory_pg.maintenance.legacy_import import import_legacy, resolve_data_dir
    from amrita_memory_pg.maintenance.legacy_prompts import legacy_prompts

    if write_config is not None and write_config.exists():
        raise click.ClickException(tr("cli.legacy.exists", path=write_config))
    old_data_dir = resolve_data_dir(old_data_dir)
    _refuse_another_bots_env(state, old_data_dir)
    bar = _Bar(tr("cli.legacy.bar"))
    async with open_store(state.settings) as store:
        # Said before anything is embedded: the model decides what the bot accepts later.
        say("cli.legacy.model", model=store.embedder.describe(), sources=state.sources(), err=True)
        try:
            report = await import_legacy(
                store,
                old_data_dir,
                db=db,
                config=legacy_config,
                chroma_dir=chroma_dir,
                dry_run=dry_run,
                on_conflict="replace" if on_conflict == "replace" else "skip",
                progress=bar,
            )
        finally:
            bar.close()
    for line in report.render(tr):
        click.echo(line)
    prompts = legacy_prompts(old_data_dir)
    if prompts:
        say("cli.legacy.prompts")
        for prompt in prompts:
            say("cli.legacy.prompt", path=prompt.path, reason=prompt.reason)
    if report.config_toml is not None:
        say("cli.legacy.config")
        for note in report.config_notes:
            say("cli.legacy.note", note=note)
        click.echo("-----")
        click.echo(report.config_toml, nl=False)
        click.echo("-----")
        if write_config is not None and not dry_run:
            write_config.parent.mkdir(parents=True, exist_ok=True)
            write_config.write_text(report.config_toml, encoding="utf-8")
            say("cli.legacy.written", path=write_config)
        elif write_config is None:
            say("cli.legacy.not_written")
    left = len(report.skipped) + len(report.unreadable) + sum(report.overflow.values())
    if left:
        # a script cannot read the report: the exit status says that not everything came over
        say("cli.legacy.left", n=left, err=True)
        sys.exit(1)
