"""The token backfill: search tokens (keyword and hybrid search) for memories and knowledge
entries that have none.

Tokens are made in Python (:func:`amrita_memory_pg.domain.tokens.search_tokens`), so
neither a migration that adds a tokenized column nor a restore of a JSONL backup (which
carries no tokens: they are recomputed, never trusted from a file) nor a merge of the
reference plugin's backup can fill them in SQL. This step does, in keyset
batches over the partial index of untokenized rows: each batch is its own short
statement, a row edited meanwhile keeps the tokens its edit stored (the update is
guarded by the content it was computed from), and an interrupted run resumes where it
stopped simply by running again. It runs at startup (``bootstrap.run_startup_checks``),
after a restore, and as ``amrita-memory tokens backfill [--all]``. Re-embedding never touches
tokens: they belong to the text, not to the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from amrita_memory_pg.domain.knowledge import knowledge_search_text
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.storage.queries import query


@dataclass(frozen=True, slots=True)
class TokenReport:
    """What a backfill did."""

    #: memories given tokens (or new tokens, with ``retokenize``)
    tokenized: int
    #: memories still without tokens afterwards (rows written meanwhile without them)
    remaining: int
    #: knowledge entries given tokens (of title + summary + body)
    knowledge_tokenized: int = 0
    #: knowledge entries still without tokens afterwards
    knowledge_remaining: int = 0


#: called after each page with (rows done, rows to do): memories, then knowledge entries
Progress = Callable[[int, int], None]
#: memories per page (a tenth of that for knowledge entries, which may be 100,000
#: characters): the walk holds one page at a time, whatever the size of the table
PAGE = 500


@dataclass(frozen=True, slots=True)
class _Pages:
    """How a walk pages: rows per page, every row or only the untokenized ones, the pages
    to stop after (None: all), and who hears each page's row count."""

    size: int
    retokenize: bool
    max_batches: int | None
    on_page: Callable[[int], None]


async def _walk(
    pool: Any,
    page: str,
    write: str,
    keys: tuple[str, ...],
    row_args: Callable[[Any], tuple[Any, ...]],
    pages: _Pages,
) -> int:
    """Keyset pages of ``page`` in ``keys`` order (the page takes the last row's ``keys``
    and the page size), each page written back by ``write`` (``row_args`` of its rows) in
    one ``executemany``; how many rows it did. Only one page is held at a time, so a
    walk over a million memories keeps constant memory."""
    cursor: tuple[Any, ...] = ("",) * len(keys)
    done = 0
    batches = 0
    while pages.max_batches is None or batches < pages.max_batches:
        rows = await pool.fetch(page, *cursor, pages.size)
        if not rows:
            break
        batches += 1
        args = [row_args(r) for r in rows]
        async with pool.acquire() as conn:
            await conn.executemany(write, args)
        done += len(rows)
        pages.on_page(len(rows))
        cursor = tuple(rows[-1][k] for k in keys)
    return done


async def _memories(pool: Any, pages: _Pages) -> int:
    # the backfill walks the partial index of the untokenized rows in id order; the
    # re-tokenization every row in the primary key's order
    retokenize = pages.retokenize
    page = query("memories_page_for_tokens") if retokenize else query("untokenized_memories")
    keys = ("partition_key", "id") if retokenize else ("id",)

    def row_args(r: Any) -> tuple[Any, ...]:
        return (r["partition_key"], r["id"], r["content"], search_tokens(r["content"]), retokenize)

    return await _walk(pool, page, query("set_memory_tokens"), keys, row_args, pages)


async def _knowledge(pool: Any, pages: _Pages) -> int:
    """The same walk over the knowledge base, in kid order; an entry edited meanwhile
    keeps the tokens its edit stored (knowledge_set_tokens_v1 compares the text)."""
    retokenize = pages.retokenize
    page = query("knowledge_page_for_tokens") if retokenize else query("untokenized_knowledge")

    def row_args(r: Any) -> tuple[Any, ...]:
        text = knowledge_search_text(r["title"], r["summary"], r["body"])
        return (r["kid"], r["title"], r["summary"], r["body"], search_tokens(text), retokenize)

    write = query("backfill_knowledge_tokens")
    return await _walk(pool, page, write, ("kid",), row_args, pages)


async def backfill_tokens(
    pool: Any,
    *,
    batch_size: int | None = None,
    retokenize: bool = False,
    max_batches: int | None = None,
    progress: Progress | None = None,
) -> TokenReport:
    """Give every memory and knowledge entry without search tokens its tokens;
    ``retokenize`` recomputes all (after the token rules changed: ``TOKENIZER_VERSION``).
    ``max_batches`` stops each of the two walks early; a later run continues (the rows
    done no longer match). ``progress`` (the CLI's bar) hears (done, to do) after each
    page. ``batch_size`` is :data:`PAGE` unless given."""
    batch_size = batch_size or PAGE
    total = 0
    if progress is not None:
        size = await pool.fetchrow(query("token_walk_size"), retokenize)
        total = int(size["memories"]) + int(size["knowledge"])
        progress(0, total)
    walked = 0

    def on_page(n: int) -> None:
        nonlocal walked, total
        walked += n
        total = max(total, walked)  # rows written meanwhile
        if progress is not None:
            progress(walked, total)

    done = await _memories(pool, _Pages(batch_size, retokenize, max_batches, on_page))
    kb_batch = max(1, batch_size // 10)  # an entry may be 100,000 characters
    kb_done = await _knowledge(pool, _Pages(kb_batch, retokenize, max_batches, on_page))
    remaining = int(await pool.fetchval(query("count_untokenized_memories")))
    kb_remaining = int(await pool.fetchval(query("count_untokenized_knowledge")))
    return TokenReport(
        tokenized=done,
        remaining=remaining,
        knowledge_tokenized=kb_done,
        knowledge_remaining=kb_remaining,
    )
