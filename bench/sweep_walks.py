"""The sweep's two walks over one store, interleaved: ``sweep_batch_v8`` (the primary key's
order; 0.14's, installed while the previous release may still run) against
``sweep_batch_v9`` (the heap's order, by block ranges). Each round copies the store, then
runs a whole pass as the service does (a cold dry run, ``CHECKPOINT``, the real pass and
the history trim), v8 and v9 alternating (ABBA), each on a fresh copy.

The store is one kept by the scale bench (its server's directory; the database ``scale``):

    .venv/bin/python bench/bench_scale.py --sizes 1M --skip backup,restore-dump,restore-jsonl,tokens,reembed --keep
    .venv/bin/python bench/sweep_walks.py /tmp/amrita_scale_1M_xxxxxxxx --rounds 2
    .venv/bin/python bench/sweep_walks.py /tmp/amrita_scale_1M_xxxxxxxx --no-block-indexes

Prints each pass's seconds and the medians' ratio v9/v8; the server is stopped at the end
(the directory stays: remove it when done).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import asyncpg
from bench_scale import NOW, settings_for  # its clock: the same rows are due

from amrita_memory_pg.maintenance.ann import maintain_configured
from amrita_memory_pg.storage.pg.database import create_pool
from amrita_memory_pg.storage.pg.embedded import start_embedded

BATCH = 5000
V8 = (
    "SELECT scanned, demoted, purged, wrapped, next_cursor FROM amrita_memory.sweep_batch_v8("
    "$1, 7, 90, $2, true, true, $3, $4, NULL)"
)
V9 = (
    "SELECT scanned, demoted, purged, wrapped, next_cursor FROM amrita_memory.sweep_batch_v9("
    "$1, 7, 90, $2, true, true, $3, $4, NULL, $5::text::xid8)"
)


async def one_pass(conn: asyncpg.Connection, version: str, dry: bool) -> tuple[float, int, int]:
    """A whole pass from the start: (seconds, scanned, changed). The real pass goes by the
    persisted cursor (the copy's is at the start), a dry one by explicit cursors."""
    since = await conn.fetchval("SELECT pg_snapshot_xmax(pg_current_snapshot())::text")
    cursor: object = ("" if version == "v8" else (0, 0)) if dry else None
    scanned = changed = 0
    t = time.perf_counter()
    while True:
        if version == "v8":
            row = await conn.fetchrow(V8, NOW, BATCH, dry, cursor)
        else:
            row = await conn.fetchrow(V9, NOW, BATCH, dry, cursor, since)
        assert row is not None
        scanned += row["scanned"]
        changed += row["demoted"] + row["purged"]
        if row["wrapped"]:
            break
        if dry:
            cursor = row["next_cursor"]
    if not dry:
        await conn.execute("SELECT * FROM amrita_memory.trim_history_v2(20, 30)")
    return time.perf_counter() - t, scanned, changed


async def main(args: argparse.Namespace) -> None:
    server = await asyncio.to_thread(start_embedded, Path(args.work))
    try:
        admin = await asyncpg.connect(server.dsn("postgres"))
        seconds: dict[str, list[float]] = {"v8": [], "v9": []}
        order = ["v8", "v9", "v9", "v8"] * args.rounds
        for i, version in enumerate(order[: 2 * args.rounds]):
            await admin.execute("DROP DATABASE IF EXISTS sweep_walk WITH (FORCE)")
            await admin.execute("CREATE DATABASE sweep_walk TEMPLATE scale STRATEGY FILE_COPY")
            if args.no_block_indexes:
                # the default settings' store: `ann-index` with [injection] off drops the
                # block indexes, so no index names importance and a demotion stays on its
                # page (HOT) where it fits
                settings = settings_for(server.dsn("sweep_walk"), Path(args.work))
                pool = await create_pool(server.dsn("sweep_walk"), settings.database)
                try:
                    await maintain_configured(pool, settings)
                finally:
                    await pool.close()
            conn = await asyncpg.connect(server.dsn("sweep_walk"))
            try:
                dry = await one_pass(conn, version, True)
                await conn.execute("CHECKPOINT")
                real = await one_pass(conn, version, False)
            finally:
                await conn.close()
            seconds[version].append(real[0])
            print(
                f"round {i // 2 + 1} {version}: dry {dry[0]:.1f} s ({dry[1]:,} rows, {dry[2]:,} due),"
                f" pass {real[0]:.1f} s ({real[1]:,} rows, {real[2]:,} changed)",
                flush=True,
            )
        await admin.execute("DROP DATABASE IF EXISTS sweep_walk WITH (FORCE)")
        await admin.close()
        v8, v9 = statistics.median(seconds["v8"]), statistics.median(seconds["v9"])
        print(f"median pass: v8 {v8:.1f} s, v9 {v9:.1f} s, v9/v8 {v9 / v8:.2f}x")
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", help="a directory bench_scale.py --keep left (its pg/ server)")
    parser.add_argument("--rounds", type=int, default=2, help="v8 and v9 passes each")
    parser.add_argument(
        "--no-block-indexes",
        action="store_true",
        help="drop the copy's ix_memory_top_* first (as with [injection] off: HOT demotions)",
    )
    asyncio.run(main(parser.parse_args()))
