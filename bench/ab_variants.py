"""The write under variants of head's schema, beside a pinned baseline, on one server.

Answers "what would the write cost if …" before anything is built (issue 24's write row).
Each variant is head's loaded database (``bench_l2``'s data and loader, as ``ab_server``)
changed by a few statements:

* ``no create row``: the newest ``insert_memory_vN`` without its create-history ``INSERT``
  (what a create record carried by the memory row until its first change would save);
* ``fillfactor 100``: the table packed full (the bench's 1.84 KB rows four a page, as the
  baseline's 1.75 KB rows are under fillfactor 90; the sweep's demotions lose their room for
  in-place updates);

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
FILLFACTOR_100 = "ALTER TABLE amrita_memory.memory SET (fillfactor = 100)"


async def newest_insert(conn: Any) -> str:
    """The name of the newest installed ``insert_memory_vN``."""
    return (await S.versions(conn, "insert_memory"))[-1][0]


async def drop_create_row(conn: Any) -> None:
    """Re-create the newest insert_memory_vN without its create-history INSERT; refuses
    when the statement is not found exactly once (the variant would time nothing)."""
    name = await newest_insert(conn)
    definition = await conn.fetchval(
        "SELECT pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n"
        " ON n.oid = p.pronamespace WHERE n.nspname = 'amrita_memory' AND p.proname = $1",
        name,
    )
    changed, found = CREATE_ROW.subn("\n", definition)
    if found != 1:
        raise RuntimeError(f"{name}: {found} create-history statements, expected 1")
    await conn.execute(changed)


#: head's variants: label -> (fillfactor 100, without the create row)
VARIANTS: dict[str, tuple[bool, bool]] = {
    "head": (False, False),
    "head, fillfactor 100": (True, False),
    "head, no create row": (False, True),
    "head, no create row, fillfactor 100": (True, True),
}


async def rewrite(conn: Any) -> None:
    """Every side alike: the tables rewritten (packing, fresh indexes), statistics made."""
    for table in ("memory", "memory_change"):
        if await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", f"amrita_memory.{table}"):
            await conn.execute(f"VACUUM FULL amrita_memory.{table}")
    await conn.execute("VACUUM (ANALYZE) amrita_memory.memory")


async def wal_blocks(conn: Any, ds: L2.Dataset, n: int = 300) -> list[tuple[str, float, float]]:
    """(relation, full-page images a write, blocks a write) of n committed writes."""
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    name = await newest_insert(conn)
    names = dict(await S.versions(conn, "insert_memory"))[name]
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
                full, no_create = VARIANTS.get(label, (False, False))
                if full:
                    await target.execute(FILLFACTOR_100)
                if no_create:
                    await drop_create_row(target)
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
                    name = await newest_insert(conn)
                    names = dict(await S.versions(conn, "insert_memory"))[name]
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
