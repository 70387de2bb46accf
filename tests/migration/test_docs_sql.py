"""The SQL the docs tell an operator to type works on a migrated database: every
``amrita_memory.<function>_vN(`` the docs name is installed (a retiring migration drops old
versions, and a doc still citing one sends an operator into an error), every versioned name
the docs describe (outside performance.md's dated history) is installed, and the ``sql``
blocks of docs/operations.md run as written (rolled back)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from tests.support.data import bulk_insert

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([*ROOT.joinpath("docs").glob("*.md"), ROOT / "README.md"])
CALL = re.compile(r"amrita_memory\.([a-z_0-9]+_v\d+)\(")
SQL_BLOCK = re.compile(r"```sql\n(.*?)```", re.S)
#: a versioned function or relation in backticks: `name_vN`, `amrita_memory.name_vN()`
NAMED = re.compile(r"`(?:amrita_memory\.)?([a-z_0-9]+_v\d+)(?:\(\))?`")
#: docs/performance.md is dated history (each run names the SQL of its day); elsewhere a
#: retired name may appear only as history, each such mention listed here: (doc, name)
HISTORY = {
    ("guarantees.md", "write_memory_v1"),  # "first write_memory_v1, migration 0007"
    ("scaling.md", "sweep_batch_v6"),  # "a Citus sweep would join ... as sweep_batch_v6 did"
}


def named_functions() -> dict[str, set[str]]:
    """Function name → the docs that call it as ``amrita_memory.name(``."""
    found: dict[str, set[str]] = {}
    for doc in DOCS:
        for name in CALL.findall(doc.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(doc.name)
    return found


async def installed(conn: asyncpg.Connection, relations: bool = False) -> set[str]:
    """The names of the functions (and with ``relations``, tables, views, indexes) in the
    amrita_memory schema."""
    sql = (
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = 'amrita_memory'"
    )
    if relations:
        sql += (
            " UNION SELECT c.relname FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'amrita_memory'"
        )
    return {r[0] for r in await conn.fetch(sql)}


def test_the_docs_name_functions_at_all() -> None:
    # the check below is only as good as what it reads
    assert {"search_memories_v8", "sweep_batch_v8", "decay_score_v1"} <= set(named_functions())


async def test_every_function_the_docs_call_is_installed(conn: asyncpg.Connection) -> None:
    functions = await installed(conn)
    missing = {
        name: sorted(docs) for name, docs in named_functions().items() if name not in functions
    }
    assert not missing, f"docs call functions that are not installed: {missing}"


async def test_every_versioned_name_the_docs_describe_is_installed(
    conn: asyncpg.Connection,
) -> None:
    # found stale once: sweep_batch_v2, memory_matches_v1 and update_memory_v1 named as
    # current in bot-memories.md, scaling.md and guarantees.md long after their retirement
    names = await installed(conn, relations=True)
    stale: list[str] = []
    history_seen: set[tuple[str, str]] = set()
    for doc in DOCS:
        if doc.name == "performance.md":
            continue
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for name in NAMED.findall(line):
                if (doc.name, name) in HISTORY:
                    history_seen.add((doc.name, name))
                elif name not in names:
                    stale.append(f"{doc.name}:{number}: {name}")
    assert not stale, f"docs describe versions that are not installed: {stale}"
    # an entry of HISTORY nobody mentions any more goes too, or the list only grows
    assert history_seen == HISTORY


async def test_the_operations_sql_runs(conn: asyncpg.Connection) -> None:
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    blocks = SQL_BLOCK.findall(text)
    assert blocks
    for block in blocks:
        tx = conn.transaction()
        await tx.start()
        try:
            # the examples read partition QQPlatform_Private_10001: give it memories
            await bulk_insert(
                conn,
                count=20,
                created_at=datetime(2026, 11, 1, tzinfo=UTC),
                importance=5,
                partitions=2,
                partition_prefix="QQPlatform_Private_1000",
            )
            await conn.execute(block)
        finally:
            await tx.rollback()
