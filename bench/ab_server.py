"""The write and the sweep, same server: a released version, the previous release's SQL and this.

``ab_l2.py`` runs each revision in its own process and server one after the other; on
this machine a side's write p50 and sweep move ±20 % between runs, more than the changes
judged. Here the sides share ONE embedded server and take turns within each round, so
whatever else the machine does falls on all of them alike:

    .venv/bin/python bench/ab_server.py                                # 100k / 1,000 partitions
    .venv/bin/python bench/ab_server.py --baseline 0.2.0 --rounds 5
    .venv/bin/python bench/ab_server.py --baseline 0.14.1 --big-partition 50000

Each database is loaded once (bench_l2's data and loader); every round, every side gets
a fresh copy (``CREATE DATABASE … TEMPLATE``) for each measurement:

* write, in-server: a plpgsql loop of ``--calls`` inserts in one transaction — no round
  trip, no commit: what the statement itself costs (µs a call);
* write, client: ``--calls`` inserts through asyncpg after a ``CHECKPOINT``, each its own
  transaction (commit, WAL flush, full-page images included): p50 as ``bench_l2`` times it;
* with ``--big-partition N``, also ``--calls`` committed inserts into that one N-row
  partition (no HNSW index: the cap's count and the insert), p50;
* sweep: one whole run from the persisted cursor as the service drives it (its newest
  ``sweep_batch_vN`` batch after batch until it wraps, then its ``trim_history_vN`` with
  the default bounds 20 / 30 where installed), warm (a dry-run pass first) and after a
  ``CHECKPOINT``, as ``bench_l2`` times it; at head also the previous release's pair
  (the versions before) while it stays installed for a rolling upgrade.

Sides: ``baseline`` (with ``--baseline VERSION``: that release's schema, migrated by its own
code in a worktree under /tmp/amrita_ab like ab_l2; the version resolved by
``bench/releases.toml``, a raw git revision accepted too), then head. For the write, every
``insert_memory_vN`` installed at head is a side, newest last — the previous release's
version stays installed for a rolling upgrade, so this release's change is timed against
it on the same data. Functions are called by argument name with the same values.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_l2 as L2
from ab_l2 import checkout
from releases import resolve

from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import create_pool
from amrita_memory_pg.storage.pg.embedded import start_embedded

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
#: bench_l2's one large partition (--big-partition)
BIG = "QQPlatform_Group_big"
#: the arguments every insert_memory_vN takes, by name (p_tokens from v2 on)
VALUES = {
    "p_scope": "'user'",
    "p_content": "'benchmark write'",
    "p_tags": "'{}'::text[]",
    "p_importance": "5",
    "p_category": "NULL",
    "p_source": "'auto'",
    "p_author": "NULL",
    "p_fingerprint": f"'{L2.FINGERPRINT}'",
    "p_tokens": "ARRAY['benchmark', 'write']",
}


async def versions(conn: Any, prefix: str) -> list[tuple[str, list[str]]]:
    """Every installed ``<prefix>_vN`` with its argument names, oldest first."""
    rows = await conn.fetch(
        "SELECT p.proname, p.proargnames FROM pg_proc p"
        " JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = 'amrita_memory' AND p.proname ~ ('^' || $1 || '_v[0-9]+$')",
        prefix,
    )
    found = [(r["proname"], list(r["proargnames"] or [])) for r in rows]
    return sorted(found, key=lambda f: int(f[0].rsplit("_v", 1)[1]))


def call(
    name: str, args: list[str], partition: str, embedding: str, now: str, cap: int = 1000
) -> str:
    """``SELECT * FROM amrita_memory.<name>(p_… => …)`` with the values it takes."""
    given = {
        "p_partition": partition, "p_embedding": embedding, "p_now": now, **VALUES,
        "p_cap": str(cap),
    }  # fmt: skip
    named = [f"{a} => {given[a]}" for a in args if a in given]
    return f"SELECT * FROM amrita_memory.{name}({', '.join(named)})"


async def in_server(conn: Any, name: str, args: list[str], n: int) -> float:
    """µs a call: a plpgsql loop of n inserts spread over the partitions, one transaction."""
    body = call(
        name,
        args,
        "'QQPlatform_Private_' || (10000 + (i * 7919) % 1000)",
        "v",
        "now()",
    )
    async with conn.transaction():
        await conn.execute(
            f"""DO $$ DECLARE t0 timestamptz; v vector; BEGIN
                  SELECT embedding INTO v FROM amrita_memory.memory LIMIT 1;
                  t0 := clock_timestamp();
                  FOR i IN 1..{n} LOOP PERFORM * FROM ({body}) s; END LOOP;
                  PERFORM set_config('bench.us',
                      (extract(epoch FROM clock_timestamp() - t0) * 1e6 / {n})::text, true);
                END $$"""
        )
        return float(await conn.fetchval("SELECT current_setting('bench.us')"))


async def client(
    conn: Any, name: str, args: list[str], n: int, ds: L2.Dataset
) -> tuple[float, float]:
    """(p50 ms, full-page images a write): n committed inserts after a CHECKPOINT."""
    sql = call(name, args, "$1", "$2", "$3")
    partitions, queries = ds.small_partitions(), ds.queries(n)
    await conn.execute("CHECKPOINT")
    before = await conn.fetchval("SELECT wal_fpi FROM pg_stat_wal")

    async def one(i: int) -> None:
        row = await conn.fetchrow(sql, partitions[(i * 104729) % len(partitions)], queries[i], NOW)
        if row is None or row["id"] is None:
            raise RuntimeError("write refused")

    timings = await L2.timed(n, one)
    await conn.execute("SELECT pg_stat_force_next_flush()")
    after = await conn.fetchval("SELECT wal_fpi FROM pg_stat_wal")
    return timings.p50, (after - before) / n


async def client_big(conn: Any, name: str, args: list[str], n: int, ds: L2.Dataset) -> float:
    """p50 ms of n committed inserts into the one large partition (its cap above it)."""
    sql = call(name, args, "$1", "$2", "$3", cap=ds.big_partition + n)
    queries = ds.queries(n)

    async def one(i: int) -> None:
        row = await conn.fetchrow(sql, BIG, queries[i], NOW)
        if row is None or row["id"] is None:
            raise RuntimeError("write refused")

    return (await L2.timed(n, one)).p50


async def sweep(conn: Any, dry_run: bool, back: int = 0) -> float:
    """Seconds of one whole sweep run: batches from the cursor until it wraps, then the
    history bounds where this schema keeps them (trim_history_vN). ``back``: 0 the newest
    ``sweep_batch_vN`` with the newest trim, 1 the version before with the trim before
    (the previous release's pair: both stay installed for a rolling upgrade)."""
    name, names = (await versions(conn, "sweep_batch"))[-1 - back]
    values = {
        "p_now": "$1",
        "p_short_days": "7",
        "p_long_days": "90",
        "p_batch": "5000",
        "p_restart_clock": "true",
        "p_protect_user": "true",
        "p_dry_run": "true" if dry_run else "false",
        "p_cursor": "$2",
        "p_until": "NULL",
    }
    sql = f"SELECT * FROM amrita_memory.{name}({', '.join(f'{a} => {values[a]}' for a in names if a in values)})"
    trims = [] if dry_run else await versions(conn, "trim_history")
    trim = trims[max(len(trims) - 1 - back, 0)][0] if trims else None
    started = time.perf_counter()
    cursor: str | None = "" if dry_run else None  # a dry run walks by an explicit cursor
    while True:
        row = await conn.fetchrow(sql, NOW, cursor)
        if row["wrapped"]:
            break
        if dry_run:
            cursor = row["next_cursor"]
    if trim:
        await conn.execute(f"SELECT * FROM amrita_memory.{trim}(20, 30)")
    return time.perf_counter() - started


def migrate_baseline(rev: str, dsn: str) -> None:
    """A release's own migrations, run by its own code (a worktree, as ab_l2 makes it)."""
    root = checkout(rev)
    code = f"import asyncio; from amrita_memory_pg.storage.pg import migrate; asyncio.run(migrate.upgrade({dsn!r}))"
    subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=True,
    )


@contextlib.asynccontextmanager
async def fresh_copy(
    admin: asyncpg.Connection, server: Any, settings: Any, db: str
) -> AsyncIterator[Any]:
    """A connection to a fresh copy of the loaded database ``src_<db>``."""
    await admin.execute("DROP DATABASE IF EXISTS bench_copy")
    await admin.execute(f"CREATE DATABASE bench_copy TEMPLATE src_{db}")
    pool = await create_pool(server.dsn("bench_copy"), settings.database)
    try:
        async with pool.acquire() as conn:
            yield conn
    finally:
        await pool.close()


async def start_server(work: Path, shared_buffers: str) -> Any:
    """An embedded server in ``work``, restarted once with ``shared_buffers`` set."""
    server = await asyncio.to_thread(start_embedded, work)
    admin = await asyncpg.connect(server.dsn("postgres"))
    await admin.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
    await admin.close()
    server.stop()
    return await asyncio.to_thread(start_embedded, work)


async def load_sources(
    admin: asyncpg.Connection, server: Any, settings: Any, ds: L2.Dataset, baseline: str | None
) -> dict[str, str | None]:
    """``src_head`` (and ``src_baseline`` at ``baseline``) migrated and loaded with ``ds``;
    returns {database suffix: revision or None for head}."""
    sources: dict[str, str | None] = {"baseline": baseline} if baseline else {}
    sources["head"] = None
    for db, rev in sources.items():
        await admin.execute(f"CREATE DATABASE src_{db}")
        if rev:
            await asyncio.to_thread(migrate_baseline, rev, server.dsn(f"src_{db}"))
        else:
            await migrate.upgrade(server.dsn(f"src_{db}"))
        pool = await create_pool(server.dsn(f"src_{db}"), settings.database)
        async with pool.acquire() as conn:
            print(f"# {db}: loaded in {await L2.load_postgres(conn, ds):.1f} s", flush=True)
            await conn.execute("VACUUM (ANALYZE) amrita_memory.memory")
            await L2.vacuum_counts(conn)
        await pool.close()
    return sources


def print_writes(results: dict[str, list[tuple[float, float, float, float]]], big: int) -> None:
    """The write table: medians of (in-server µs, client p50 ms, FPI, client p50 into the
    large partition) per side, ratios to the first side."""
    first = next(iter(results))
    into = f" | into the {big:,}-row partition, p50 | vs {first}" if big else ""
    print(
        f"\n| write | in-server µs a call | client p50 (commit) | FPI a write | vs {first}{into} |"
    )
    print("|---|---:|---:|---:|---:" + ("|---:|---:|" if big else "|"))
    base = [statistics.median(x[i] for x in results[first]) for i in range(4)]
    for label, runs in results.items():
        us, p50, fpi, big_p50 = (statistics.median(x[i] for x in runs) for i in range(4))
        extra = f" | {big_p50:.3f} ms | {big_p50 / base[3]:.2f}×" if big else ""
        print(
            f"| {label} | {us:.1f} | {p50:.3f} ms | {fpi:.1f} | "
            f"{us / base[0]:.2f}× / {p50 / base[1]:.2f}×{extra} |"
        )


async def run(args: argparse.Namespace) -> None:
    ds = L2.Dataset(args.rows, args.partitions, args.dim, NOW, big_partition=args.big_partition)
    work = Path(tempfile.mkdtemp(prefix="amrita_bench_server_"))
    server = await start_server(work, args.shared_buffers)
    settings = L2.bench_settings(work)
    admin = await asyncpg.connect(server.dsn("postgres"))
    try:
        sources = await load_sources(admin, server, settings, ds, args.baseline)
        sides: list[tuple[str, str, str, list[str]]] = []  # label, source db, fn, args
        sweeps_at_head = 0
        for db in sources:
            probe = await asyncpg.connect(server.dsn(f"src_{db}"))
            found = await versions(probe, "insert_memory")
            if db == "head":
                sweeps_at_head = len(await versions(probe, "sweep_batch"))
            await probe.close()
            if db == "baseline":
                name, names = found[-1]
                sides.append((f"{resolve(args.baseline)[1]} {name}", db, name, names))
            else:
                sides += [(f"head {name}", db, name, names) for name, names in found[-2:]]
        results: dict[str, list[tuple[float, float, float, float]]] = {s[0]: [] for s in sides}
        # sweep sides: (label, source db, how many versions back); head's previous release too
        sweep_sides = [("baseline", "baseline", 0)] if args.baseline else []
        if sweeps_at_head > 1:  # the previous release's sweep, while it stays installed
            sweep_sides.append(("head (previous release's sweep)", "head", 1))
        sweep_sides.append(("head", "head", 0))
        sweeps: dict[str, list[float]] = {label: [] for label, _, _ in sweep_sides}
        for r in range(args.rounds):
            for label, db, name, names in sides:
                async with fresh_copy(admin, server, settings, db) as conn:
                    us = await in_server(conn, name, names, args.calls)
                    p50, fpi = await client(conn, name, names, args.calls, ds)
                    big_p50 = (
                        await client_big(conn, name, names, args.calls, ds)
                        if ds.big_partition
                        else 0.0
                    )
                results[label].append((us, p50, fpi, big_p50))
                print(
                    f"# round {r + 1} write {label}: in-server {us:.1f} µs, client p50 "
                    f"{p50:.3f} ms, {fpi:.1f} full-page images a write"
                    + (f", into the large partition {big_p50:.3f} ms" if ds.big_partition else ""),
                    flush=True,
                )
            for label, db, back in [] if args.no_sweep else sweep_sides:
                async with fresh_copy(admin, server, settings, db) as conn:
                    await sweep(conn, dry_run=True)
                    await conn.execute("CHECKPOINT")
                    sweeps[label].append(await sweep(conn, dry_run=False, back=back))
                print(f"# round {r + 1} sweep {label}: {sweeps[label][-1]:.2f} s", flush=True)
        await admin.execute("DROP DATABASE IF EXISTS bench_copy")
    finally:
        await admin.close()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)  # two loaded databases: ~1 GB
    print_writes(results, ds.big_partition)
    if any(sweeps.values()):
        shown = {"baseline": resolve(args.baseline)[1] if args.baseline else "baseline"}
        first_label = next(iter(sweeps))
        print(
            f"\n| sweep, whole run | each round | median | vs {shown.get(first_label, first_label)} |"
        )
        print("|---|---:|---:|---:|")
        base_s = statistics.median(sweeps[first_label])
        for label, seconds in sweeps.items():
            med = statistics.median(seconds)
            each = " / ".join(f"{x:.2f}" for x in seconds)
            print(f"| {shown.get(label, label)} | {each} s | {med:.2f} s | {med / base_s:.2f}× |")


def common_arguments(parser: argparse.ArgumentParser) -> None:
    """The data, the rounds, the baseline and the server."""
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--baseline", help="a release to time beside head: a version (0.2.0), or a git revision"
    )
    parser.add_argument("--shared-buffers", default="512MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common_arguments(parser)
    parser.add_argument("--no-sweep", action="store_true", help="the write only")
    parser.add_argument(
        "--big-partition",
        type=int,
        default=0,
        help="rows of one extra partition, whose writes are timed too (the cap's count)",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
