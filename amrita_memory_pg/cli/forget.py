"""``amrita-memory memory delete|lineage``, ``forget``, ``erase``, ``ledger`` and
``rederive``: deleting with the cascade, forgetting, erasing a person, and looking at what
they reach — through the use cases every surface calls (``usecases/forgetting.py``).

Each destructive command prints what it would reach and asks (or ``--yes``); ``--dry-run``
only prints. The rules are in ``sql/functions/lineage.sql`` and docs/forgetting.md.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping

import click

from amrita_memory_pg.cli.app import KEY, CliState, TextType, cli, run_async, say, tr
from amrita_memory_pg.cli.memories import memory_group
from amrita_memory_pg.domain.lineage import Cascade, memory_ref
from amrita_memory_pg.domain.validation import MAX_ID_CHARS, MAX_QUERY_CHARS
from amrita_memory_pg.storage.lineage import LineageRow

#: characters of a text shown per line
SHOWN = 60


def _cut(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= SHOWN else flat[: SHOWN - 1] + "…"


def _operator() -> str:
    return f"cli:{getpass.getuser()}"


def _receipt(counts: Mapping[str, int]) -> None:
    """Rows per table, one a line, in the run's language (no content)."""
    for table, n in sorted(counts.items()):
        say("cli.forget.receipt_row", table=tr("table." + table), n=n)


def _print_cascade(cascade: Cascade) -> None:
    for row in cascade.rows:
        if row.action == "rows":
            continue
        where = f"{row.key}/{row.id}" if row.key else (row.id or "")
        say(
            "cli.forget.row",
            action=tr("cli.forget.action." + row.action),
            kind=tr("cli.lineage.kind." + row.kind),
            where=where,
            text=_cut(row.body),
        )
    if cascade.counts:
        _receipt(cascade.counts)


def print_lineage(title: str, rows: list[LineageRow]) -> None:
    """One direction of a memory's lineage (``title``: its catalog key)."""
    say(title)
    if not rows:
        say("cli.lineage.none")
    for r in rows:
        say(
            "cli.lineage.row",
            indent="  " * (r.depth - 1),
            kind=tr("cli.lineage.kind." + r.ref.kind),
            where=f"{r.ref.key}/{r.ref.id}",
            by=r.made_by + (f" #{r.cycle_id}" if r.cycle_id else ""),
            at=f"{r.made_at:%Y-%m-%d %H:%M}",
            text=_cut(r.body) if r.present else tr("cli.lineage.gone"),
        )


@memory_group.command("lineage")
@click.argument("key", type=KEY)
@click.argument("memory_id", type=TextType(MAX_ID_CHARS))
@click.pass_obj
@run_async
async def memory_lineage(state: CliState, key: str, memory_id: str) -> None:
    """What memory MEMORY_ID of KEY was made from, and what was made from it."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        seen = await mem.cases.forgetting.lineage_of(memory_ref(key, memory_id))
    print_lineage("cli.lineage.made_from", seen.made_from)
    print_lineage("cli.lineage.used_by", seen.used_by)


@memory_group.command("delete")
@click.argument("key", type=KEY)
@click.argument("memory_id", type=TextType(MAX_ID_CHARS))
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
@run_async
async def memory_delete(state: CliState, key: str, memory_id: str, yes: bool) -> None:
    """Delete memory MEMORY_ID of KEY; what was made from it alone is deleted, what was
    made from it and other facts is withheld until the L3 loop writes it again."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        cases = mem.cases.forgetting
        if await mem.cases.memories.get(key, memory_id) is None:
            raise click.ClickException(tr("cli.forget.no_memory", id=memory_id, key=key))
        _print_cascade(await cases.delete_plan(key, memory_id))
        if not yes:
            click.confirm(tr("cli.forget.ask_delete", id=memory_id, key=key), abort=True)
        done = await cases.remove(key, memory_id, by_person=True)
    if done is None:
        raise click.ClickException(tr("cli.forget.no_memory", id=memory_id, key=key))
    say("cli.forget.deleted", id=memory_id, deleted=len(done.deleted), withheld=len(done.withheld))


@cli.command("forget")
@click.argument("key", type=KEY)
@click.argument("what", type=TextType(MAX_QUERY_CHARS))
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--dry-run", is_flag=True, help="Only print what it would reach.")
@click.pass_obj
@run_async
async def forget(state: CliState, key: str, what: str, yes: bool, dry_run: bool) -> None:
    """Forget a memory of KEY (WHAT: its id, or words to find it) with everything derived
    from it and every trace of it; recorded in the erasure ledger, so no restore brings
    it back."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        cases = mem.cases.forgetting
        found = await cases.find(key, what)
        if not found:
            raise click.ClickException(tr("cli.forget.none", key=key, what=what))
        if len(found) > 1 and not any(r.id == what for r in found):
            for record in found:
                say("cli.forget.candidate", id=record.id, text=_cut(record.content))
            raise click.ClickException(tr("cli.forget.several", n=len(found)))
        record = next((r for r in found if r.id == what), found[0])
        plan = await cases.forget(
            key, [record.id], requested_by=_operator(), by_person=True, dry_run=True
        )
        say("cli.forget.what", id=record.id, text=_cut(record.content))
        _print_cascade(plan)
        if dry_run:
            return
        if not yes:
            click.confirm(tr("cli.forget.ask"), abort=True)
        done = await cases.forget(key, [record.id], requested_by=_operator(), by_person=True)
    say(
        "cli.forget.done",
        id=record.id,
        deleted=len(done.deleted),
        withheld=len(done.withheld),
        lines=len(done.chat_lines),
    )
    _receipt(done.counts)


@cli.command("erase")
@click.argument("key", type=KEY)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--dry-run", is_flag=True, help="Only print the rows it would remove.")
@click.pass_obj
@run_async
async def erase(state: CliState, key: str, yes: bool, dry_run: bool) -> None:
    """Erase partition KEY (a person or a chat) in every table, record it in the erasure
    ledger (no content) and print the receipt: rows removed per table."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        cases = mem.cases.forgetting
        plan = await cases.erase(key, requested_by=_operator(), dry_run=True)
        if not plan.counts:
            say("cli.erase.nothing", key=key)
            return
        _receipt(plan.counts)
        if dry_run:
            return
        if not yes:
            click.confirm(tr("cli.erase.ask", key=key), abort=True)
        done = await cases.erase(key, requested_by=_operator())
        ledger = await cases.ledger(1)
    say("cli.erase.done", key=key)
    _receipt(done.counts)
    if ledger:
        say("cli.erase.ledger", id=ledger[0].id, subject=ledger[0].subject)


@cli.command("ledger")
@click.option("-n", "--limit", type=click.IntRange(1, 10000), default=50, show_default=True)
@click.pass_obj
@run_async
async def ledger(state: CliState, limit: int) -> None:
    """The erasure ledger, newest first: what was forgotten or erased, when, by whom and
    how many rows — never content (a partition is named by its key's sha256)."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        entries = await mem.cases.forgetting.ledger(limit)
    for e in entries:
        say(
            "cli.ledger.row",
            id=e.id,
            at=f"{e.at:%Y-%m-%d %H:%M:%S}",
            kind=e.kind,
            subject=e.subject[:16],
            memories=e.memories,
            lines=e.chat_lines,
            rows=sum(e.counts.values()),
            by=e.requested_by,
        )
    say("cli.ledger.total", n=len(entries))


@cli.command("rederive")
@click.argument("key", type=KEY, required=False)
@click.pass_obj
@run_async
async def rederive(state: CliState, key: str | None) -> None:
    """The rows a delete, forget or change withheld, waiting for the L3 loop of their
    partition (KEY, or every partition) to write them again."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        tasks = await mem.cases.forgetting.pending(key)
    for task in tasks:
        say(
            "cli.rederive.row",
            key=task.partition_key,
            id=task.id,
            kind=tr("cli.lineage.kind." + task.kind),
            reason=task.reason,
            cycle=tr("cli.rederive.claimed", cycle=task.claimed_by_cycle)
            if task.claimed_by_cycle
            else "",
            text=_cut(task.held_text) or tr("cli.rederive.no_content"),
            sources=len(task.sources),
        )
    say("cli.rederive.total", n=len(tasks))
