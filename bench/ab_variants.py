"""The write under variants of head's schema, beside a pinned baseline, on one server.

Answers "what would the write cost if …" before anything is built (issue 24's write row).
Each variant is head's loaded database (``bench_l2``'s data and loader, as ``ab_server``)
changed by a few statements:

* ``no create row``: the newest ``insert_memory_vN`` without its create-history ``INSERT``
  (what a create record carried by the memory row until its first change would save);
* ``fillfactor 100``: the table packed full (the bench's 1.84 KB rows four a page, as the
  baseline's 1.75 KB rows are under fillfactor 90; the sweep's demotions lose their room for
  in-place updates);
* ``no lock or writer flag``: the newest ``insert_memory_vN`` without the table lock its model
  check reads under and without the flag that keeps the trail trigger out (the trigger on
  insert dropped instead, so the create row is written once): what the statements around the
  row cost;

and every side, the baseline's included, is rewritten alike (``VACUUM FULL``), so that page
packing and index age do not differ between them. Per round, each side on a fresh copy:
``ab_server``'s in-server loop and committed client writes. With ``--wal-blocks``, instead,
where the WAL of 300 writes after a ``CHECKPOINT`` goes (``pg_walinspect``): full-page images
per relation and write.

    .venv/bin/python bench/ab_variants.py --baseline 9f422fc --rounds 5
    .venv/bin/python bench/ab_variants.py --baseline 9f422fc --wal-blocks
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ab_server as S
import bench_l2 as L2

#: the create-history statement of insert_memory_v5 and later (memory_v8.sql, memory_v9.sql)
CREATE_ROW = re.compile(r"\n\s*INSERT INTO amrita_memory\.memory_change\b.*?\);\n", re.S)
#: insert_memory_v6's statements around the row that are not the baseline's: the table lock
#: its model check reads under, and the writer flag that keeps the trail trigger out
LOCK = re.compile(r"\n\s*LOCK TABLE amrita_memory\.memory IN ROW EXCLUSIVE MODE;\n")
FLAG = re.compile(
    r"\n\s*PERFORM set_config\('amrita_memory\.history_by_writer', '[a-z]*', true\);\n"
)
FILLFACTOR_100 = "ALTER TABLE amrita_memory.memory SET (fillfactor = 100)"
#: without the writer flag the trail trigger would write the create row a second time
NO_INSERT_TRIGGER = "DROP TRIGGER trail_memory_insert ON amrita_memory.memory"


async def newest_insert(conn: Any) -> tuple[str, list[str]]:
    """The newest installed ``insert_memory_vN``: its name and argument names."""
    return (await S.versions(conn, "insert_memory"))[-1]


async def edit_insert(conn: Any, cuts: list[tuple[re.Pattern[str], int]]) -> None:
    """Re-create the newest insert_memory_vN without the statements ``cuts`` match; refuses
    when a pattern is not found exactly as often as expected (the variant would time
    nothing)."""
    name, _ = await newest_insert(conn)
    definition = await conn.fetchval(
        "SELECT pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n"
        " ON n.oid = p.pronamespace WHERE n.nspname = 'amrita_memory' AND p.proname = $1",
        name,
    )
    for pattern, expected in cuts:
        definition, found = pattern.subn("\n", definition)
        if found != expected:
            raise RuntimeError(f"{name}: {found} of {pattern.pattern!r}, expected {expected}")
    await conn.execute(definition)


#: head's variants: label -> what is changed (fillfactor 100, no create row, no lock/flag)
VARIANTS: dict[str, frozenset[str]] = {
    "head": frozenset(),
    "head, fillfactor 100": frozenset({"fillfactor"}),
    "head, no create row": frozenset({"create"}),
    "head, no create row, fillfactor 100": frozenset({"fillfactor", "create"}),
    "head, no lock or writer flag": frozenset({"lock"}),
}


async def make_variant(conn: Any, changes: frozenset[str]) -> None:
    """Apply a variant's changes to head's database."""
    if "fillfactor" in changes:
        await conn.execute(FILLFACTOR_100)
    cuts: list[tuple[re.Pattern[str], int]] = []
    if "create" in changes:
        cuts.append((CREATE_ROW, 1))
    if "lock" in changes:
        cuts += [(LOCK, 1), (FLAG, 2)]
        await conn.execute(NO_INSERT_TRIGGER)
    if cuts:
        await edit_insert(conn, cuts)


async def history_rows_of_a_write(conn: Any) -> int:
    """How many history rows one write of the newest insert_memory_vN leaves (rolled back):
    a variant must still write its create row once, or not at all when it cuts it."""
    name, names = await newest_insert(conn)
    tr = conn.transaction()
    await tr.start()
    try:
        vector = await conn.fetchval("SELECT embedding FROM amrita_memory.memory LIMIT 1")
        partition = await conn.fetchval("SELECT partition_key FROM amrita_memory.memory LIMIT 1")
        new = await conn.fetchval(S.call(name, names, "$1", "$2", "$3"), partition, vector, S.NOW)
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM amrita_memory.memory_change WHERE memory_id = $1", new
            )
        )
    finally:
        await tr.rollback()


async def rewrite(conn: Any) -> None:
    """Every side alike: the tables rewritten (packing, fresh indexes), statistics made."""
    for table in ("memory", "memory_change"):
        if await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", f"amrita_memory.{table}"):
            await conn.execute(f"VACUUM FULL amrita_memory.{table}")
    await conn.execute("VACUUM (ANALYZE) amrita_memory.memory")


async def wal_blocks(conn: Any, ds: L2.Dataset, n: int = 300) -> list[tuple[str, float, float]]:
    """(relation, full-page images a write, blocks a write) of n committed writes."""
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    name, names = await newest_insert(conn)
    sql = S.call(name, names, "$1", "$2", "$3")
    partitions, queries = ds.small_partitions(), ds.queries(n)
    await conn.execute("CHECKPOINT")
    start = await conn.fetchval("SELECT pg_current_wal_lsn()")
    for i in range(n):
        await conn.fetchrow(sql, partitions[(i * 104729) % len(partitions)], queries[i], S.NOW)
    end = await conn.fetchval("SELECT pg_current_wal_lsn()")
    rows = await conn.fetch(
        "SELECT coalesce(c.relname, b.relfilenode::text) || CASE b.relforknumber"
        "  WHEN 0 THEN '' WHEN 1 THEN ' (free space map)' WHEN 2 THEN ' (visibility map)'"
        "  ELSE ' (fork ' || b.relforknumber || ')' END AS rel,"
        " count(*) FILTER (WHERE b.block_fpi_length > 0) AS fpi, count(*) AS blocks"
        " FROM pg_get_wal_block_info($1, $2) b"
        " LEFT JOIN pg_class c ON c.relfilenode = b.relfilenode"
        " GROUP BY 1 ORDER BY 2 DESC, 3 DESC",
        start,
        end,
    )
    return [(r["rel"], r["fpi"] / n, r["blocks"] / n) for r in rows if r["blocks"] >= n / 20]


async def run(args: argparse.Namespace) -> None:
    ds = L2.Dataset(args.rows, args.partitions, args.dim, S.NOW)
    work = Path(tempfile.mkdtemp(prefix="amrita_bench_variants_"))
    server = await S.start_server(work, args.shared_buffers)
    settings = L2.bench_settings(work)
    admin = await asyncpg.connect(server.dsn("postgres"))
    sides: dict[str, str] = {}  # label -> database
    try:
        await S.load_sources(admin, server, settings, ds, args.baseline)
        if args.baseline:
            sides[args.baseline] = "baseline"
        for i, label in enumerate(VARIANTS):
            db = f"variant{i}"
            await admin.execute(f"CREATE DATABASE src_{db} TEMPLATE src_head")
            sides[label] = db
        for label, db in sides.items():
            target = await asyncpg.connect(server.dsn(f"src_{db}"))
            try:
                changes = VARIANTS.get(label, frozenset())
                await make_variant(target, changes)
                if label in VARIANTS:
                    rows = await history_rows_of_a_write(target)
                    if rows != (0 if "create" in changes else 1):
                        raise RuntimeError(f"{label}: a write leaves {rows} history rows")
                await rewrite(target)
            finally:
                await target.close()
            print(f"# {label}: made", flush=True)
        if args.wal_blocks:
            for label, db in sides.items():
                async with S.fresh_copy(admin, server, settings, db) as conn:
                    print(f"\n{label}: full-page images / blocks a write")
                    for rel, fpi, blocks in await wal_blocks(conn, ds):
                        print(f"    {rel:<45} {fpi:5.2f} / {blocks:5.2f}")
            return
        results: dict[str, list[tuple[float, float, float]]] = {label: [] for label in sides}
        for r in range(args.rounds):
            for label, db in sides.items():
                async with S.fresh_copy(admin, server, settings, db) as conn:
                    name, names = await newest_insert(conn)
                    us = await S.in_server(conn, name, names, args.calls)
                    p50, fpi = await S.client(conn, name, names, args.calls, ds)
                results[label].append((us, p50, fpi))
                print(
                    f"# round {r + 1} {label}: in-server {us:.1f} µs, client p50 {p50:.3f} ms,"
                    f" {fpi:.1f} full-page images a write",
                    flush=True,
                )
    finally:
        await admin.close()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    S.print_writes(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    S.common_arguments(parser)
    parser.add_argument(
        "--wal-blocks", action="store_true", help="where a write's WAL goes, per relation"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
