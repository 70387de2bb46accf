"""``amrita-memory knowledge …`` and ``grant`` / ``revoke`` / ``grants``.

The knowledge base is managed here whether or not the L3 loop runs: list, show, add,
edit (whole fields or a line range), rm, search, and Markdown export/import in the
reference's layout (``KNOWLEDGE_{kid}.md`` + ``knowledge_index.json``). The same
validation and limits as the tools (``knowledge_max_chars`` is checked by the write).
``grant``/``revoke`` manage the ``memory.knowledge`` permission of chat users (what
LitePerm's node does where LitePerm is installed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from amrita_memory_pg.bootstrap import open_store
from amrita_memory_pg.cli.app import INT32_MAX, CliState, cli, run_async, say, tr
from amrita_memory_pg.domain.knowledge import KNOWLEDGE_NODE, preview
from amrita_memory_pg.domain.records import SEARCH_MODES, SearchMode
from amrita_memory_pg.domain.validation import not_utf8
from amrita_memory_pg.maintenance.knowledge import (
    export_markdown,
    import_markdown,
    knowledge_service,
)
from amrita_memory_pg.usecases.knowledge import KnowledgeCases

F = TypeVar("F", bound=Callable[..., Any])


@asynccontextmanager
async def service(state: CliState, *, reads: bool = False) -> AsyncIterator[KnowledgeCases]:
    """The knowledge use cases on an opened store (an operator: no reader check);
    ``reads``: the command only reads (the replica answers it when configured)."""
    async with open_store(state.settings) as store:
        yield KnowledgeCases(knowledge_service(store, reads=reads))


def _body(body: str | None, body_file: Path | None) -> str | None:
    if body is not None and body_file is not None:
        raise click.UsageError(tr("cli.kb.both_body"))
    if body_file is not None:
        try:
            return body_file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise click.BadParameter(
                not_utf8(str(body_file), exc), param_hint="--body-file"
            ) from exc
    return body


@cli.group()
def knowledge() -> None:
    """The global knowledge base (entries, Markdown export/import, suggestions)."""


@knowledge.command("list")
@click.pass_obj
@run_async
async def knowledge_list(state: CliState) -> None:
    """Every entry: kid, lines, characters, title, summary preview."""
    async with service(state, reads=True) as kb:
        entries = await kb.entries()
    if not entries:
        say("cli.kb.empty")
        return
    say("cli.kb.head")
    for e in entries:
        say(
            "cli.kb.row",
            kid=e.kid,
            lines=e.total_lines,
            chars=e.char_count,
            title=e.title,
            summary=preview(e.summary, 40),
        )
    say("cli.kb.total", n=len(entries))


def line_option(flag: str, help: str) -> Callable[[F], F]:
    """A body line number (0-based; the database's int range, checked before it gets there)."""
    return click.option(
        flag,
        flag.removeprefix("--"),
        type=click.IntRange(-INT32_MAX, INT32_MAX),
        default=None,
        help=help,
    )


@knowledge.command("show")
@click.argument("kid")
@line_option("--start", "First line (0-based).")
@line_option("--end", "End line (exclusive).")
@click.pass_obj
@run_async
async def knowledge_show(state: CliState, kid: str, start: int | None, end: int | None) -> None:
    """Title, summary and numbered body lines of one entry."""
    async with service(state, reads=True) as kb:
        window = await kb.read(kid, start, end)
    click.echo(f"# {window.title}  [{window.kid}]")
    click.echo(window.summary)
    say("cli.kb.window", start=window.range_start, end=window.range_end, total=window.total_lines)
    for number, line in enumerate(window.body_lines, start=window.range_start):
        click.echo(f"{number:>4}  {line}")


@knowledge.command("add")
@click.option("--title", required=True)
@click.option("--summary", required=True, help="What a search matches (it is embedded).")
@click.option("--body", default=None)
@click.option("--body-file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_obj
@run_async
async def knowledge_add(
    state: CliState, title: str, summary: str, body: str | None, body_file: Path | None
) -> None:
    """Create an entry; prints its kid."""
    text = _body(body, body_file) or ""
    async with service(state) as kb:
        written = await kb.create(title=title, summary=summary, body=text)
    say("cli.kb.created", kid=written.kid, lines=written.total_lines, chars=written.char_count)


@knowledge.command("edit")
@click.argument("kid")
@click.option("--title", default=None)
@click.option("--summary", default=None)
@click.option("--body", default=None)
@click.option("--body-file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@line_option("--start", "Replace lines from here…")
@line_option("--end", "…to here (exclusive; default: the end).")
@click.pass_obj
@run_async
async def knowledge_edit(
    state: CliState,
    kid: str,
    title: str | None,
    summary: str | None,
    body: str | None,
    body_file: Path | None,
    start: int | None,
    end: int | None,
) -> None:
    """Change fields of an entry; with --start the body replaces lines [start, end)."""
    text = _body(body, body_file)
    async with service(state) as kb:
        written = await kb.update(
            kid, title=title, summary=summary, body=text, start_line=start, end_line=end
        )
    say("cli.kb.updated", kid=written.kid, lines=written.total_lines, chars=written.char_count)


@knowledge.command("rm")
@click.argument("kid")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
@run_async
async def knowledge_rm(state: CliState, kid: str, yes: bool) -> None:
    """Delete an entry."""
    if not yes:
        click.confirm(tr("cli.kb.confirm_rm", kid=kid), abort=True)
    async with service(state) as kb:
        await kb.delete(kid)
    say("cli.kb.deleted", kid=kid)


@knowledge.command("search")
@click.argument("query")
@click.option("--top-k", type=click.IntRange(1, 50), default=5, show_default=True)
@click.option(
    "--mode",
    type=click.Choice(SEARCH_MODES),
    default=None,
    help="vector | keyword | hybrid (default: [retrieval] default_mode)",
)
@click.pass_obj
@run_async
async def knowledge_search(
    state: CliState, query: str, top_k: int, mode: SearchMode | None
) -> None:
    """Search the entries: vector (summary), keyword (title + summary + body) or hybrid.
    Columns: kid, score (what the mode ranks by), distance (- without a vector), title."""
    async with service(state, reads=True) as kb:
        hits = await kb.search(query, top_k, mode=mode)
    if not hits:
        say("cli.kb.no_hits")
    else:
        say("cli.kb.search_head")
    for h in hits:
        distance = "-" if h.distance is None else f"{h.distance:.4f}"
        click.echo(f"{h.kid}  {h.score:.4f}  {distance}  {h.title} — {preview(h.summary, 40)}")


@knowledge.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.pass_obj
@run_async
async def knowledge_export(state: CliState, directory: Path) -> None:
    """Write KNOWLEDGE_{kid}.md files and knowledge_index.json into DIRECTORY."""
    async with service(state, reads=True) as kb:
        written = await export_markdown(kb.service, directory.expanduser())
    say("cli.kb.exported", n=len(written), directory=directory.expanduser().resolve())


@knowledge.command("import")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.pass_obj
@run_async
async def knowledge_import(state: CliState, directory: Path) -> None:
    """Create or overwrite entries from the KNOWLEDGE_{kid}.md files of DIRECTORY."""
    async with service(state) as kb:
        report = await import_markdown(kb.service, directory.expanduser())
    say(
        "cli.kb.imported",
        created=len(report.created),
        updated=len(report.updated),
        unchanged=len(report.unchanged),
    )


@knowledge.command("suggestions")
@click.pass_obj
@run_async
async def knowledge_suggestions(state: CliState) -> None:
    """Unhandled suggestions from the chat (pending, or claimed by a running cycle)."""
    async with service(state) as kb:
        total, rows = await kb.pending_suggestions(limit=1000)
    if not total:
        say("cli.kb.no_suggestions")
        return
    for r in rows:
        claimed = r["status"] == "claimed"
        where = (
            tr("cli.kb.claimed", cycle=r["claimed_by_cycle"]) if claimed else tr("cli.kb.pending")
        )
        target = f" {r['kid']}" if r["kid"] else ""
        say(
            "cli.kb.suggestion",
            id=r["id"],
            action=r["action"],
            target=target,
            title=r["title"],
            author=r["author_id"],
            where=where,
        )
    say("cli.kb.total", n=total)


@cli.command()
@click.argument("user")
@click.argument("node", default=KNOWLEDGE_NODE)
@click.pass_obj
@run_async
async def grant(state: CliState, user: str, node: str) -> None:
    """Grant NODE (default memory.knowledge) to chat user USER."""
    async with service(state) as kb:
        added = await kb.grant(user, node, by="cli")
    say("cli.kb.granted" if added else "cli.kb.had", user=user, node=node)


@cli.command()
@click.argument("user")
@click.argument("node", default=KNOWLEDGE_NODE)
@click.pass_obj
@run_async
async def revoke(state: CliState, user: str, node: str) -> None:
    """Revoke NODE (default memory.knowledge) from chat user USER."""
    async with service(state) as kb:
        removed = await kb.revoke(user, node)
    say("cli.kb.revoked" if removed else "cli.kb.had_not", user=user, node=node)


@cli.command()
@click.pass_obj
@run_async
async def grants(state: CliState) -> None:
    """Every granted permission."""
    async with service(state) as kb:
        rows = await kb.grants()
    if not rows:
        say("cli.kb.no_grants")
    for user, node, by, at in rows:
        say("cli.kb.grant", user=user, node=node, by=by, at=f"{at:%Y-%m-%d %H:%M}")
