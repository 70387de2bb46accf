"""``amrita-memory memory …``, ``clear`` and ``extract``: L2 memories by hand,
through the use cases every surface calls (:class:`MemoryCases`); their errors become one
line at the CLI's edge (``cli.main.main``).

What the CLI writes is a person's: ``memory add`` stores ``source=user`` (protected from
every automatic process) and may write the bot-wide ``global`` scope, which the chat
tools refuse to everyone but superusers. ``clear KEY`` asks first (or ``--yes``), takes
a backup, then deletes the partition's memories. Keys are partition keys as ``status``
and ``psql`` show them (``global``, ``QQPlatform_Private_10001``, ``QQPlatform_Group_1``).
"""

from __future__ import annotations

from typing import cast

import click

from amrita_memory_pg.cli.app import (
    INT64_MAX,
    KEY,
    CliState,
    TextType,
    cli,
    language,
    run_async,
    say,
    tr,
)
from amrita_memory_pg.domain.keys import MAX_KEY_CHARS, scope_of_key
from amrita_memory_pg.domain.records import (
    SEARCH_MODES,
    Category,
    MemoryRecord,
    SearchMode,
    parse_tags,
)
from amrita_memory_pg.domain.validation import (
    MAX_CONTENT_CHARS,
    MAX_QUERY_CHARS,
    MAX_TAGS_CHARS,
    InvalidInput,
    check_text,
    parse_category,
)
from amrita_memory_pg.usecases.values import MemoryQuery, NewMemory

CATEGORY_CHOICES = "preference|rule|event|knowledge (or 偏好|规则|事件|知识)"


def _category(value: str | None) -> Category | None:
    if value is None:
        return None
    try:
        return cast(Category, parse_category(value))
    except InvalidInput:
        raise click.BadParameter(tr("cli.memory.bad_category", value=value)) from None


def _line(record: MemoryRecord) -> str:
    """One row under :func:`_head`'s column names, in the run's language."""
    return tr(
        "cli.memory.row",
        id=record.id,
        importance=record.importance,
        category=tr(f"category.{record.category}") if record.category else "-",
        source=tr(f"source.{record.source}"),
        content=" ".join(record.content.split()),
    )


@cli.group("memory")
def memory_group() -> None:
    """Add, list and search L2 memories of one partition key."""


@memory_group.command("add")
@click.argument("key", type=KEY)
@click.argument("content")
@click.option("-c", "--category", default=None, help=CATEGORY_CHOICES)
@click.option("-i", "--importance", type=click.IntRange(1, 10), default=5, show_default=True)
@click.option("--tags", type=TextType(MAX_TAGS_CHARS), default="", help="Comma-separated tags.")
@click.pass_obj
@run_async
async def memory_add(
    state: CliState, key: str, content: str, category: str | None, importance: int, tags: str
) -> None:
    """Add a manual memory (source=user) to KEY (`global` for the bot-wide scope)."""
    from amrita_memory_pg.bootstrap import open_memory

    try:
        text = check_text(content.strip(), max_chars=MAX_CONTENT_CHARS)
    except InvalidInput as exc:
        raise click.BadParameter(exc.said(language()), param_hint="CONTENT") from None
    if not text:
        raise click.BadParameter(tr("cli.memory.empty_content"), param_hint="CONTENT")
    new = NewMemory(
        partition_key=key,
        scope=scope_of_key(key),
        content=text,
        tags=parse_tags(tags),
        importance=importance,
        category=_category(category),
        source="user",
        author="cli",
    )
    async with open_memory(state.settings, startup=False) as mem:
        record = (await mem.cases.memories.write(new, idempotent=False)).record
    say(
        "cli.memory.added",
        id=record.id,
        key=key,
        scope=tr(f"scope.{record.scope}"),
        importance=record.importance,
    )


@memory_group.command("list")
@click.argument("key", type=KEY)
@click.option("-c", "--category", default=None, help=CATEGORY_CHOICES)
@click.option("-i", "--min-importance", type=click.IntRange(1, 10), default=None)
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--offset", type=click.IntRange(0, INT64_MAX), default=0)
@click.pass_obj
@run_async
async def memory_list(
    state: CliState,
    key: str,
    category: str | None,
    min_importance: int | None,
    limit: int,
    offset: int,
) -> None:
    """List KEY's memories: id, [importance], category, source, content."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        records, total = await mem.cases.memories.page(
            key,
            limit=limit,
            offset=offset,
            category=_category(category),
            min_importance=min_importance,
        )
    if records:
        say("cli.memory.head")
    for record in records:
        click.echo(_line(record))
    say("cli.memory.shown", shown=len(records), total=total)


@memory_group.command("search")
@click.argument("key", type=KEY)
@click.argument("query", type=TextType(MAX_QUERY_CHARS))
@click.option("-c", "--category", default=None, help=CATEGORY_CHOICES)
@click.option("-k", "--top-k", type=click.IntRange(1, 50), default=10, show_default=True)
@click.option(
    "--mode",
    type=click.Choice(SEARCH_MODES),
    default=None,
    help="vector | keyword | hybrid (default: [retrieval] default_mode)",
)
@click.pass_obj
@run_async
async def memory_search(
    state: CliState,
    key: str,
    query: str,
    category: str | None,
    top_k: int,
    mode: SearchMode | None,
) -> None:
    """Search KEY's memories (decay-scored, like read_memory)."""
    from amrita_memory_pg.bootstrap import open_memory

    asked = MemoryQuery(key, query, top_k=top_k, category=_category(category), mode=mode)
    async with open_memory(state.settings, startup=False) as mem:
        hits = (await mem.cases.memories.search(asked)).hits
    if hits:
        say("cli.memory.search_head")
    for hit in hits:
        click.echo(f"{hit.decay_score:.4f}  {_line(hit.record)}")
    say("cli.memory.hits", n=len(hits))
    if hits:
        say("cli.memory.legend")


@cli.command("clear")
@click.argument("key", type=KEY)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
@run_async
async def clear(state: CliState, key: str, yes: bool) -> None:
    """Delete every memory of KEY (manual ones too), after a backup. The memo stays."""
    from amrita_memory_pg.bootstrap import open_store
    from amrita_memory_pg.maintenance.clear import clear_partition, plan_clear

    async with open_store(state.settings) as store:
        plan = await plan_clear(store, key)
        if plan.count == 0:
            say("cli.clear.none", key=key)
            return
        if not yes:
            click.confirm(tr("cli.clear.confirm", n=plan.count, key=key), abort=True)
        result = await clear_partition(store, key)
    say("cli.clear.done", n=result.deleted, key=key, backup=result.backup.jsonl_path)


@cli.command("extract")
@click.argument("session_key", type=TextType(MAX_KEY_CHARS))
@click.pass_obj
@run_async
async def extract(state: CliState, session_key: str) -> None:
    """Run the automatic extraction of SESSION_KEY's unread chat lines now."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(state.settings, startup=False) as mem:
        outcome = await mem.extractor.extract(session_key, trigger="cli")
    say(
        "cli.extract.done",
        status=tr(f"cli.extract.status.{outcome.status}"),
        entries=outcome.entries,
        replaced=outcome.replaced,
        tokens=outcome.usage.total_tokens,
        reason=tr("cli.reason", reason=outcome.reason) if outcome.reason else "",
    )
    if outcome.status in ("rejected", "failed", "disabled"):
        raise SystemExit(1)
