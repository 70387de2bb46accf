"""``amrita-memory profile show|history|revert|import``: look at a user's profile, undo a
bad rewrite (the L3 loop edits profiles; every change is kept in ``profile_history``), and
bring over the reference plugin's ``user_profile.md``.

A user is named by their personal partition key (``QQPlatform_Private_10001``) or by a
bare QQ number (``10001``). A revert is itself a change (``revert to vN``, by ``cli``),
so it can be reverted too.
"""

from __future__ import annotations

import getpass
from pathlib import Path

import click

from amrita_memory_pg.bootstrap import open_store
from amrita_memory_pg.cli.app import INT32_MAX, CliState, cli, run_async, say, tr
from amrita_memory_pg.domain.keys import MAX_KEY_CHARS, check_partition_key, user_key
from amrita_memory_pg.domain.profile import (
    ProfileActor,
    ProfileChange,
    parse_profile_file,
    render_numbered,
)
from amrita_memory_pg.domain.validation import InvalidInput, echo, text_problem
from amrita_memory_pg.services.profiles import ProfileService
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage.profiles import ProfileRepository
from amrita_memory_pg.usecases.pause import PauseGate
from amrita_memory_pg.usecases.profiles import ProfileCases


def _key(text: str) -> str:
    try:
        key = user_key(check_partition_key(text)) if text.strip() else None
    except InvalidInput:  # not a key: maybe a bare QQ number, under the same caps
        key = user_key(text) if len(text) <= MAX_KEY_CHARS and not text_problem(text) else None
    if key is None:
        raise click.BadParameter(tr("cli.profile.not_user", text=echo(text)), param_hint="USER")
    return key


def _change_line(change: ProfileChange) -> str:
    """One history row in the run's language (its operation is stored text, shown as is)."""
    if change.actor_kind == "loop":
        who = tr("cli.profile.who.loop", cycle=change.cycle_id)
    elif change.actor_kind in ("cli", "chat"):
        who = tr(f"cli.profile.who.{change.actor_kind}", who=change.actor or "-")
    else:
        who = tr("cli.profile.who.other", kind=change.actor_kind, who=change.actor or "-")
    changed = change.old_summary != change.new_summary
    return tr(
        "cli.profile.change",
        version=change.version,
        when=change.changed_at.strftime("%Y-%m-%d %H:%M:%S %Z"),
        who=who,
        operation=change.operation,
        old=change.old_count,
        new=change.new_count,
        summary=tr("cli.profile.summary_changed") if changed else "",
    )


def _service(store: Store) -> ProfileCases:
    """The profile use cases (an operator is never paused: no gate)."""
    service = ProfileService(
        ProfileRepository(store.pool, acquire_timeout=store.settings.database.connect_timeout),
        store.settings.profile,
    )
    return ProfileCases(service, PauseGate(None))


def _operator() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return "operator"


@cli.group()
def profile() -> None:
    """User profiles: show one, list its changes, revert a change."""


@profile.command("show")
@click.argument("user")
@click.pass_obj
@run_async
async def profile_show(state: CliState, user: str) -> None:
    """Print USER's profile: the summary and the numbered body lines."""
    key = _key(user)
    async with open_store(state.settings) as store:
        current = await _service(store).get(key)
    if current.version == 0:
        say("cli.profile.none", key=key)
        return
    say("cli.profile.head", key=key, version=current.version, lines=current.total_lines)
    say("cli.profile.summary", summary=current.summary)
    if current.lines:
        click.echo(render_numbered(current.lines))


@profile.command("history")
@click.argument("user")
@click.option(
    "--version",
    "version",
    type=click.IntRange(0, INT32_MAX - 1),
    default=None,
    help="Show one change in full.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Newest N changes.")
@click.pass_obj
@run_async
async def profile_history(
    state: CliState, user: str, version: int | None, limit: int | None
) -> None:
    """List USER's kept profile changes, newest first (who, when, what)."""
    key = _key(user)
    async with open_store(state.settings) as store:
        service = _service(store)
        if version is not None:
            change = await service.change(key, version)
            if change is None:
                raise click.ClickException(tr("cli.profile.not_kept", key=key, version=version))
            click.echo(_change_line(change))
            for label, summary, lines in (
                (tr("cli.profile.before"), change.old_summary, change.old_lines or ()),
                (tr("cli.profile.after"), change.new_summary, change.new_lines or ()),
            ):
                say("cli.profile.part", label=label, summary=summary)
                if lines:
                    click.echo(render_numbered(lines))
            return
        changes = await service.history(key, limit)
    if not changes:
        say("cli.profile.no_history", key=key)
        return
    say("cli.profile.history", key=key, n=len(changes), keep=state.settings.profile.history_keep)
    for change in changes:
        click.echo("  " + _change_line(change))


@profile.command("revert")
@click.argument("user")
@click.argument("version", type=click.IntRange(0, INT32_MAX - 1))
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
@run_async
async def profile_revert(state: CliState, user: str, version: int, yes: bool) -> None:
    """Restore USER's profile as it was at VERSION (0 = before its first change)."""
    key = _key(user)
    if not yes:
        click.confirm(tr("cli.profile.confirm_revert", key=key, version=version), abort=True)
    async with open_store(state.settings) as store:
        result = await _service(store).revert(key, version, ProfileActor("cli", _operator()))
    if not result.changed:
        say("cli.profile.unchanged", key=key, version=version)
        return
    say(
        "cli.profile.reverted",
        key=key,
        version=version,
        new=result.profile.version,
        lines=result.profile.total_lines,
    )


@profile.command("import")
@click.argument("user")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--yes", is_flag=True, help="Do not ask before replacing an existing profile.")
@click.pass_obj
@run_async
async def profile_import(state: CliState, user: str, file: Path, yes: bool) -> None:
    """Replace USER's profile with FILE in the reference's format (summary, a `---` line,
    the body), e.g. its data/amrita_plugin_memory/user_profile.md."""
    key = _key(user)
    path = file.expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(tr("cli.profile.cannot_read", path=path, reason=exc)) from exc
    content = parse_profile_file(text)
    async with open_store(state.settings) as store:
        service = _service(store)
        current = await service.get(key)
        if not current.empty and not yes:
            click.confirm(
                tr(
                    "cli.profile.confirm_import",
                    key=key,
                    version=current.version,
                    lines=current.total_lines,
                    name=path.name,
                ),
                abort=True,
            )
        result = await service.replace(
            key, content, ProfileActor("cli", _operator()), operation=f"import {path.name}"
        )
    if not result.changed:
        say("cli.profile.import_same", key=key, name=path.name)
        return
    say(
        "cli.profile.imported",
        name=path.name,
        key=key,
        version=result.profile.version,
        lines=result.profile.total_lines,
    )
