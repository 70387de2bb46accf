"""The token backfill: search tokens for memories that have none (issue 16).

Tokens are made in Python (:func:`amrita_memory_pg.domain.tokens.search_tokens`), so
neither the migration that added the column (0015_hybrid) nor a restore of a JSONL
backup (which carries no tokens: they are recomputed, never trusted from a file) nor a
merge of the reference plugin's backup can fill them in SQL. This step does, in keyset
batches over the partial index of untokenized rows: each batch is its own short
statement, a row edited meanwhile keeps the tokens its edit stored (the update is
guarded by the content it was computed from), and an interrupted run resumes where it
stopped simply by running again. It runs at startup (``bootstrap.run_startup_checks``),
after a restore, and as ``amrita-memory tokens backfill [--all]``. Re-embedding never touches
tokens: they belong to the text, not to the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.storage.queries import query


@dataclass(frozen=True, slots=True)
class TokenReport:
    """What a backfill did."""

    #: memories given tokens (or new tokens, with ``retokenize``)
    tokenized: int
    #: memories still without tokens afterwards (rows written meanwhile without them)
    remaining: int


async def backfill_tokens(
    pool: Any, *, batch_size: int = 500, retokenize: bool = False, max_batches: int | None = None
) -> TokenReport:
    """Give every memory without search tokens its tokens; ``retokenize`` recomputes all
    (after the token rules changed: ``TOKENIZER_VERSION``). ``max_batches`` stops early;
    a later run continues (the rows done no longer match)."""
    page = query("memories_page_for_tokens") if retokenize else query("untokenized_memories")
    cursor = ""
    done = 0
    batches = 0
    while max_batches is None or batches < max_batches:
        rows = await pool.fetch(page, cursor, batch_size)
        if not rows:
            break
        batches += 1
        args = [
            (r["partition_key"], r["id"], r["content"], search_tokens(r["content"]), retokenize)
            for r in rows
        ]
        async with pool.acquire() as conn:
            await conn.executemany(query("set_memory_tokens"), args)
        done += len(rows)
        cursor = rows[-1]["id"]
    remaining = int(await pool.fetchval(query("count_untokenized_memories")))
    return TokenReport(tokenized=done, remaining=remaining)
