"""``amrita-memory memory delete|lineage``, ``forget``, ``erase``, ``ledger`` and
``rederive``: deleting with the cascade, forgetting, erasing a person, and looking at what
they reach — through the use cases every surface calls (``usecases/forgetting.py``).

Each destructive command prints what it would reach and asks (or ``--yes``); ``--dry-run``
only prints. The rules are in ``sql/functions/lineage.sql`` and docs/forgetting.md.
"""

from __future__ import annotations

import getpass

import click

from amrita_memory_pg.cli.app import KEY, CliState, TextType, cli, run_async
from amrita_memory_pg.cli.memories import memory_group
from amrita_memory_pg.domain.lineage import Cascade, CascadeRow, memory_ref
from amrita_memory_pg.domain.validation import MAX_ID_CHARS, MAX_QUERY_CHARS
from amrita_memory_pg.storage.lineage import LineageRow

#: characters of a text shown per line
SHOWN = 60


def _cut(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= SHOWN else flat[: SHOWN - 1] + "…"


def _operator() -> str:
    return f"cli:{getpass.getuser()}"


def _row(row: CascadeRow) -> str:
    where = f"{row.key}/{row.id}" if row.key else (row.id or "")
    return f"  {row.action:<9} {row.kind:<16} {where}  {_cut(row.body)}"


def _print_cascade(cascade: Cascade) -> None:
    for row in cascade.rows:
        if row.action != "rows":
            click.echo(_row(row))
    if cascade.counts:
        click.echo(
            "  rows: " + ", ".join(f"{table} {n}" for table, n in sorted(cascade.counts.items()))
        )


def print_lineage(title: str, rows: list[LineageRow]) -> None:
    click.echo(f"{title}:")
    if not rows:
        click.echo("  (none)")
    for r in rows:
        state = _cut(r.body) if r.present else "(no longer exists)"
        cycle = f" cycle {r.cycle_id}" if r.cycle_id else ""
        click.echo(
            f"  {'  ' * (r.depth - 1)}{r.ref.kind:<16} {r.ref.key}/{r.ref.id}  "
            f"[{r.made_by}{cycle}, {r.made_at:%Y-%m-%d %H:%M}]  {state}"
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
    print_lineage("made from", seen.made_from)
    print_lineage("used by", seen.used_by)


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
            raise click.ClickException(f"no memory {memory_id} in {key}")
        _print_cascade(await cases.delete_plan(key, memory_id))
        if not yes:
            click.confirm(f"Delete memory {memory_id} of {key}?", abort=True)
        done = await cases.remove(key, memory_id, by_person=True)
    if done is None:
        raise click.ClickException(f"no memory {memory_id} in {key}")
    click.echo(
        f"deleted {memory_id}; derived rows deleted {len(done.deleted)}, "
        f"withheld for the L3 loop {len(done.withheld)}"
    )


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
            raise click.ClickException(f"no memory of {key} matches {what!r}")
        if len(found) > 1 and not any(r.id == what for r in found):
            for record in found:
                click.echo(f"  {record.id}  {_cut(record.content)}")
            raise click.ClickException(
                f"{len(found)} memories match: run again with the id of the one to forget"
            )
        record = next((r for r in found if r.id == what), found[0])
        plan = await cases.forget(
            key, [record.id], requested_by=_operator(), by_person=True, dry_run=True
        )
        click.echo(f"forget {record.id}: {_cut(record.content)}")
        _print_cascade(plan)
        if dry_run:
            return
        if not yes:
            click.confirm("Forget it, for good (no backup brings it back)?", abort=True)
        done = await cases.forget(key, [record.id], requested_by=_operator(), by_person=True)
    click.echo(
        f"forgot {record.id}: derived rows deleted {len(done.deleted)}, withheld for the L3 "
        f"loop {len(done.withheld)}, chat lines removed {len(done.chat_lines)}"
    )
    click.echo("  rows: " + ", ".join(f"{table} {n}" for table, n in sorted(done.counts.items())))


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
            click.echo(f"{key} holds nothing to erase")
            return
        for table, n in sorted(plan.counts.items()):
            click.echo(f"  {table:<22} {n}")
        if dry_run:
            return
        if not yes:
            click.confirm(f"Erase {key} in every table (no backup brings it back)?", abort=True)
        done = await cases.erase(key, requested_by=_operator())
        ledger = await cases.ledger(1)
    click.echo(f"erased {key}; receipt (rows removed per table, no content):")
    for table, n in sorted(done.counts.items()):
        click.echo(f"  {table:<22} {n}")
    if ledger:
        click.echo(f"erasure ledger entry {ledger[0].id}, subject sha256 {ledger[0].subject}")


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
        rows = sum(e.counts.values())
        click.echo(
            f"{e.id:>5}  {e.at:%Y-%m-%d %H:%M:%S}  {e.kind:<6} {e.subject[:16]}…  "
            f"memories {e.memories}, chat lines {e.chat_lines}, rows {rows}  by {e.requested_by}"
        )
    click.echo(f"{len(entries)} entries")


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
        claimed = f" (cycle {task.claimed_by_cycle})" if task.claimed_by_cycle else ""
        click.echo(
            f"{task.partition_key}  #{task.id}  {task.kind:<16} {task.reason:<7}"
            f"{claimed}  {_cut(task.held_text) or '(content not kept)'}"
            f"  sources left {len(task.sources)}"
        )
    click.echo(f"{len(tasks)} waiting")
