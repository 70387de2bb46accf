"""The SQL the docs tell an operator to type works on a migrated database: every
``amrita_memory.<function>_vN(`` the docs name is installed (a retiring migration drops old
versions, and a doc still citing one sends an operator into an error), and the ``sql``
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


def named_functions() -> dict[str, set[str]]:
    """Function name → the docs that call it as ``amrita_memory.name(``."""
    found: dict[str, set[str]] = {}
    for doc in DOCS:
        for name in CALL.findall(doc.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(doc.name)
    return found


def test_the_docs_name_functions_at_all() -> None:
    # the check below is only as good as what it reads
    assert {"search_memories_v8", "sweep_batch_v8", "decay_score_v1"} <= set(named_functions())


async def test_every_function_the_docs_call_is_installed(conn: asyncpg.Connection) -> None:
    rows = await conn.fetch(
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'amrita_memory'"
    )
    installed = {r["proname"] for r in rows}
    missing = {
        name: sorted(docs) for name, docs in named_functions().items() if name not in installed
    }
    assert not missing, f"docs call functions that are not installed: {missing}"


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
