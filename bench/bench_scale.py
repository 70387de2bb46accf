"""The scale bench: every figure of a store from 10k to 1M memories, as a table and a plot.

Not a test (``make bench-scale``; minutes at 100k, about an hour at 1M on 2 cores). For
each size it starts a throwaway embedded PostgreSQL (``--shared-buffers``, 512MB by
default, the same at every size: the hit ratio shows when the working set outgrows it),
COPYs a synthetic store of that size into it (``bench/scale_data.py``: a global
partition, a tail of large group partitions, tens of thousands of small ones; Chinese
and English rows of real length with the product's search tokens), builds the large
partitions' HNSW, keyword and block indexes with the product's own ``maintain_configured``, and
measures:

* ``serve`` — a child process that opens the store as a bot does (``open_memory``):
  the ``SELECT 1`` floor, reads in every mode (hybrid, the default, first; small
  partitions, the product's search statement), reads in the large partitions and
  ``global``, writes (``insert_memory``), the per-turn memory block (default settings,
  and with ``[injection] enabled``); its RSS afterwards is the bot's;
* ``ann`` — each indexed partition's HNSW path with filters (iterative scan) against the
  exact path: recall@5 of the exact top 5 (decay off: the nearest first) and the time;
* the walks over the whole table, each in a child process of its own, with its peak RSS
  and the server backends' peak private memory and temp files while it ran: ``backup``
  (``create_backup``, what ``amrita-memory backup create`` runs: pg_dump + JSONL of one
  snapshot), ``restore`` of the dump and of the JSONL into an empty database
  (``restore_held``, what ``amrita-memory backup restore`` runs), the ``sweep`` (a dry
  run cold, then the real pass warm after a CHECKPOINT, as bench_l2.py times it),
  ``tokens`` (``amrita-memory tokens backfill --all``) and ``reembed`` (the staging and
  the switch of ``reindex`` with the hashing embedder: the database's side of a model
  change; a real model adds its own embedding time) on copies of the store;
* bytes: the memory table, its TOAST and each index, per memory; the history tables; the
  database; the server's shared_buffers hit ratio over the serve phase.

Results accumulate by size in ``--json`` (runs of different sizes merge), and every run
renders the table of all sizes there (``--markdown``) and the plot (``--png``):

    .venv/bin/python bench/bench_scale.py                                  # 10k, 100k, 1M
    .venv/bin/python bench/bench_scale.py --sizes 10k,100k
    .venv/bin/python bench/bench_scale.py --sizes 1M --skip restore-jsonl
    .venv/bin/python bench/bench_scale.py --render                         # table + plot only
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_l2 as L2
from scale_data import Query, Store

from amrita_memory_pg.embedding.base import Embedder
from amrita_memory_pg.embedding.factory import create_embedder
from amrita_memory_pg.maintenance.ann import maintain_configured
from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import create_pool

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
DEFAULT_SIZES = "10k,100k,1M"
DEFAULT_JSON = Path(tempfile.gettempdir()) / "amrita_bench_scale.json"
WALKS = ("backup", "restore-dump", "restore-jsonl", "sweep", "tokens", "reembed")


# ------------------------------------------------------------------------------ helpers


def parse_size(text: str) -> int:
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return f"{n:,}"


def say(message: str) -> None:
    print(f"# {datetime.now(UTC):%H:%M:%S} {message}", flush=True)


def p50(samples: Sequence[float]) -> float:
    return statistics.median(samples) if samples else math.nan


def p95(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.floor(0.95 * len(ordered)))] if ordered else math.nan


async def timed(n: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    """Milliseconds of each of n calls."""
    out = []
    for i in range(n):
        t = time.perf_counter()
        await call(i)
        out.append((time.perf_counter() - t) * 1000.0)
    return out


def settings_for(dsn: str, work: Path, **more: Any) -> Settings:
    """The product's settings on the bench's server: the hashing embedder (no model runs),
    no statement timeout (a walk over 1M rows is one long statement in places)."""
    return load_settings(
        env={},
        read_default_files=False,
        overrides={
            "data_dir": str(work),
            "database.url": dsn,
            "database.command_timeout": 3600,
            "database.statement_timeout": 0,
            "embedding.protocol": "hash",
            **more,
        },
    )


def status_kb(field: str) -> int:
    """A field of this process's /proc status in kB: VmRSS (resident now), VmHWM (its peak).

    Not getrusage's ru_maxrss: Linux starts a child's at the parent's resident set at the
    fork, so every child would report at least the bench's own size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


# ------------------------------------------------------------------------------ load


async def load(conn: Any, store: Store, embedder: Embedder) -> float:
    """COPY the store into amrita_memory.memory (and a memo per partition); seconds.

    Through a staging table so that the tsvector is made in the server from the product's
    tokens (asyncpg has no binary codec for tsvector); the INSERT fires the trail trigger,
    so every memory has its create row in memory_change, as written by the product."""
    started = time.perf_counter()
    # The vectors are tagged as the configured (hashing) embedder's: a restore then finds
    # the store on the configured model and re-embeds nothing, as in a real deployment.
    await store_meta.write_embedder(conn, embedder, dim=store.dim)
    fingerprint = embedder.fingerprint
    columns = ["id", "partition_key", "scope", "content", "tags", "importance", "category"]
    columns += ["source", "origin", "created_at", "updated_at", "tier_since", "embedding"]
    columns += ["embed_fingerprint"]
    listed = ", ".join(columns)
    await conn.execute(
        f"CREATE TEMP TABLE scale_load AS SELECT {listed} FROM amrita_memory.memory WITH NO DATA"
    )
    await conn.execute("ALTER TABLE scale_load ADD COLUMN tok text[]")
    names = [store.name(p) for p in range(store.partitions)]
    scopes = [store.scope(p) for p in range(store.partitions)]
    done = 0
    for rows in store.chunks():
        records = [
            (
                rows.ids[i],
                names[p],
                scopes[p],
                rows.texts[i],
                rows.tags[i],
                int(rows.importance[i]),
                rows.categories[i],
                rows.sources[i],
                "person" if rows.sources[i] == "user" else "extraction",
                rows.created[i],
                rows.created[i],
                rows.created[i],
                rows.vectors[i],
                fingerprint,
                rows.tokens[i],
            )
            for i, p in enumerate(rows.partitions.tolist())
        ]
        await conn.copy_records_to_table("scale_load", columns=[*columns, "tok"], records=records)
        await conn.execute(
            f"INSERT INTO amrita_memory.memory ({listed}, search_tokens) "
            f"SELECT {listed}, array_to_tsvector(tok) FROM scale_load"
        )
        await conn.execute("TRUNCATE scale_load")
        done += len(records)
        elapsed = time.perf_counter() - started
        eta = elapsed / done * (store.rows - done)
        say(f"loaded {done:,} / {store.rows:,} ({done / elapsed:,.0f} rows/s, ETA {eta:.0f} s)")
    await conn.execute("DROP TABLE scale_load")
    memos = [
        (store.name(p), store.memo(p), 1, NOW)
        for p in range(1, store.partitions)  # the global scope has no memo of its own
    ]
    await conn.copy_records_to_table(
        "memo",
        schema_name="amrita_memory",
        columns=["partition_key", "content", "version", "updated_at"],
        records=memos,
    )
    # A live store's history was trimmed by its last sweep run (see bench_l2.load_postgres).
    await conn.execute("SELECT * FROM amrita_memory.trim_history_v2(20, 30)")
    return time.perf_counter() - started


async def relation_bytes(conn: Any) -> dict[str, int]:
    """Bytes of the memory table's parts, the history tables and the database."""
    row = await conn.fetchrow(
        """
        SELECT pg_relation_size('amrita_memory.memory') AS heap,
               pg_table_size('amrita_memory.memory') - pg_relation_size('amrita_memory.memory')
                   AS toast,
               pg_indexes_size('amrita_memory.memory') AS indexes,
               coalesce((SELECT sum(pg_relation_size(i.indexrelid))
                           FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                          WHERE i.indrelid = 'amrita_memory.memory'::regclass
                            AND c.relname LIKE 'ix_memory_ann_%'), 0)::bigint AS ann,
               coalesce((SELECT sum(pg_relation_size(i.indexrelid))
                           FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                          WHERE i.indrelid = 'amrita_memory.memory'::regclass
                            AND c.relname LIKE 'ix_memory_kw_%'), 0)::bigint AS keyword,
               pg_relation_size('amrita_memory.pk_memory') AS pk,
               pg_relation_size('amrita_memory.ix_memory_partition_key_created_at_id') AS by_time,
               pg_total_relation_size('amrita_memory.memory_change') AS history,
               pg_total_relation_size('amrita_memory.memo') AS memo,
               pg_database_size(current_database()) AS database,
               (SELECT count(*) FROM amrita_memory.memory) AS rows,
               (SELECT avg(pg_column_size(m.*))::int FROM amrita_memory.memory m) AS row_bytes,
               (SELECT avg(pg_column_size(m.embedding))::int FROM amrita_memory.memory m)
                   AS vector_bytes,
               (SELECT avg(pg_column_size(m.search_tokens))::int FROM amrita_memory.memory m)
                   AS token_bytes
        """
    )
    return {k: int(v) for k, v in row.items()}


# ------------------------------------------------------------------------------ children


@dataclass
class Child:
    """One child process's result: its JSON, wall time, peak RSS, and the server's side."""

    result: dict[str, Any]
    seconds: float
    max_rss_mb: float
    server_anon_mb: float
    background_anon_mb: float
    temp_mb: float


class ServerWatch:
    """Samples the server processes' private memory (RssAnon: work_mem, sorts, tuple
    stores; shared_buffers is shared, not counted) every 0.2 s while a child runs: the
    peak of the client backends (the walk's own) and of the others (autovacuum, ...)."""

    def __init__(self, postmaster: int | None) -> None:
        self.postmaster = postmaster
        self.peak_kb = 0
        self.background_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _children(self) -> list[int]:
        if self.postmaster is None:
            return []
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == self.postmaster:
                out.append(int(entry.name))
        return out

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in self._children():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    title = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                client = b"[local]" in title or b"(" in title  # "user db [local] idle"
                for line in status.splitlines():
                    if line.startswith("RssAnon:"):
                        kb = int(line.split()[1])
                        if client:
                            self.peak_kb = max(self.peak_kb, kb)
                        else:
                            self.background_kb = max(self.background_kb, kb)
            self._stop.wait(0.2)

    def __enter__(self) -> ServerWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def temp_bytes(admin: Any) -> int:
    return int(await admin.fetchval("SELECT coalesce(sum(temp_bytes), 0) FROM pg_stat_database"))


async def run_child(
    task: str, dsn: str, work: Path, rows: int, admin: Any, postmaster: int | None, *extra: str
) -> Child:
    """Run ``bench_scale.py child TASK`` and wait for it, measuring what it cost."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / f"{task}.json"
    argv = [sys.executable, str(HERE), "child", task, "--dsn", dsn, "--work", str(work)]
    argv += ["--rows", str(rows), "--out", str(out), *extra]
    temp_before = await temp_bytes(admin)
    started = time.perf_counter()
    with ServerWatch(postmaster) as watch:
        proc = await asyncio.create_subprocess_exec(
            *argv, env={**os.environ, "PYTHONPATH": str(REPO)}
        )
        status = await proc.wait()
    seconds = time.perf_counter() - started
    if status != 0:
        raise RuntimeError(f"child {task} failed with status {status}")
    await asyncio.sleep(0.6)  # exited backends' statistics arrive asynchronously
    temp = await temp_bytes(admin) - temp_before
    result = json.loads(out.read_text())
    return Child(
        result,
        seconds,
        result["max_rss_mb"],
        watch.peak_kb / 1024,
        watch.background_kb / 1024,
        temp / 2**20,
    )


def child_main(args: argparse.Namespace) -> None:
    """The entry of a child process: one task, its result as JSON in --out."""
    store = Store(args.rows, NOW)
    work = Path(args.work)
    tasks: dict[
        str, Callable[[Store, str, Path, argparse.Namespace], Coroutine[Any, Any, dict[str, Any]]]
    ] = {
        "serve": serve,
        "ann": ann,
        "backup": walk_backup,
        "restore": walk_restore,
        "sweep": walk_sweep,
        "tokens": walk_tokens,
        "reembed": walk_reembed,
    }
    result = asyncio.run(tasks[args.task](store, args.dsn, work, args))
    result["rss_end_mb"] = status_kb("VmRSS") / 1024
    result["max_rss_mb"] = status_kb("VmHWM") / 1024
    Path(args.out).write_text(json.dumps(result))


# ------------------------------------------------------------------------------ serve


def spread(items: Sequence[int], n: int) -> list[int]:
    """n picks over items, scattered (a prime stride), the same on every run."""
    return [items[(i * 7919) % len(items)] for i in range(n)]


async def serve(store: Store, dsn: str, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The bot's side: floor, reads, writes and memory block through the product's code."""
    from amrita_memory_pg.bootstrap import open_memory
    from amrita_memory_pg.tools.context import ToolContext

    out: dict[str, Any] = {}
    small = store.small_personal() + store.small_groups()
    reads = store.queries(spread(small, args.queries), args.queries)
    big = list(range(store.first_small))  # global and the large groups
    big_reads = {p: store.queries([p], max(20, args.queries // 5), seed=9 + p) for p in big}
    modes = ("hybrid", "vector", "keyword")
    async with open_memory(settings_for(dsn, work), startup=False) as mem:
        async with mem.pool.acquire() as conn:

            async def search(q: Query, mode: str) -> Any:
                return await L2.pg_search(
                    conn, store.name(q.partition), q.vector, NOW, mode=mode, tokens=q.tokens
                )

            def reader(
                qs: list[Query], mode: str, step: int = 1
            ) -> Callable[[int], Awaitable[Any]]:
                return lambda i: search(qs[i * step % len(qs)], mode)

            floor = await timed(500, lambda i: conn.fetchval("SELECT 1"))
            for mode in modes:
                await timed(50, reader(reads, mode, -1))  # warm: plans, buffers
                samples = await timed(len(reads), reader(reads, mode))
                out[f"read_{mode}_p50"], out[f"read_{mode}_p95"] = p50(samples), p95(samples)
            floor += await timed(500, lambda i: conn.fetchval("SELECT 1"))
            out["floor_p50"] = p50(floor)
            for p, qs in big_reads.items():
                for mode in modes:
                    await timed(5, reader(qs, mode))
                    samples = await timed(len(qs), reader(qs, mode))
                    out[f"big_{p}_{mode}_p50"] = p50(samples)
                out[f"big_{p}_rows"] = int(store.sizes[p])
            targets = spread(small, args.writes)
            vectors = [q.vector for q in reads]
            fp = mem.embedder.fingerprint
            writes = await timed(
                args.writes,
                lambda i: L2.pg_write(
                    conn,
                    store.name(targets[i]),
                    vectors[i % len(vectors)],
                    NOW,
                    1000,
                    fingerprint=fp,
                ),
            )
            out["write_p50"], out["write_p95"] = p50(writes), p95(writes)
            if store.large:
                largest = store.name(1)
                samples = await timed(
                    100,
                    lambda i: L2.pg_write(
                        conn, largest, vectors[i % len(vectors)], NOW, 10**6, fingerprint=fp
                    ),
                )
                out["write_large_p50"] = p50(samples)
        out["block_default_p50"] = await turns(mem, store, args.turns, ToolContext)
    injected = settings_for(dsn, work, **{"injection.enabled": True})
    async with open_memory(injected, startup=False) as mem:
        out["block_injection_p50"] = await turns(mem, store, args.turns, ToolContext)
        out.update(await block_ab(mem.pool, store, args.turns))
    return out


async def block_ab(pool: Any, store: Store, n: int) -> dict[str, float]:
    """The database part of the block with [injection] enabled (global and the chat's
    partition, 200 candidates): memory_block_v2 (0.14, every row of both scopes ordered)
    against memory_block_v3 (per partition, through the block indexes), call by call
    alternately on one connection over the chats of :func:`turns`: p50 of each side."""
    personal = store.small_personal()
    groups = store.small_groups() + list(range(1, store.first_small))
    chats = [
        store.name(
            groups[(i * 104729) % len(groups)]
            if i % 3 == 2
            else personal[(i * 7919) % len(personal)]
        )
        for i in range(n)
    ]
    sides: dict[str, list[float]] = {"v2": [], "v3": []}
    async with pool.acquire() as conn:
        for i in range(-20, n):  # the first 20: plans and buffers, not timed
            chat = chats[i % n]
            for side in ("v2", "v3") if i % 2 else ("v3", "v2"):
                t = time.perf_counter()
                await conn.fetchval(
                    f"SELECT count(*) FROM amrita_memory.memory_block_{side}("
                    "$1::text[], $2, $3::text[], 200, NULL, 0, NULL, NULL)",
                    [chat], chat, ["global", chat],
                )  # fmt: skip
                if i >= 0:
                    sides[side].append((time.perf_counter() - t) * 1000.0)
    return {"block_db_v2_p50": p50(sides["v2"]), "block_db_v3_p50": p50(sides["v3"])}


async def turns(mem: Any, store: Store, n: int, context: Any) -> float:
    """p50 of the per-turn memory block over n turns of different chats: private chats of
    the small personal partitions, and group chats (small groups and the large ones)."""
    personal = store.small_personal()
    groups = store.small_groups() + list(range(1, store.first_small))
    chats = []
    for i in range(n + 20):
        user = store.name(personal[(i * 7919) % len(personal)]).rsplit("_", 1)[1]
        if i % 3 == 2:
            group = store.name(groups[(i * 104729) % len(groups)]).rsplit("_", 1)[1]
            chats.append(context(platform="qq", user_id=user, group_id=group))
        else:
            chats.append(context(platform="qq", user_id=user))
    await timed(20, lambda i: mem.memory_block(chats[n + i]))
    return p50(await timed(n, lambda i: mem.memory_block(chats[i])))


# ------------------------------------------------------------------------------ ann


#: the filters of the HNSW test: none, importance (about 40 % of the rows), a category
#: (about 17 %) — the iterative scan must keep yielding rows past the filtered ones
FILTERS: dict[str, dict[str, Any]] = {
    "none": {},
    "importance>=7": {"p_importance_min": 7},
    "category=event": {"p_category": "event"},
}


#: the search functions' arguments for a nearest-first top 5 (decay off), $1-$3 bound
EXACT_ARGS = {
    "p_partition": "$1", "p_query": "$2", "p_top_k": "5", "p_now": "$3", "p_decay": "false",
    "p_base_days": "30", "p_boost": "1", "p_floor": "0.05", "p_importance_min": "NULL",
    "p_importance_max": "NULL", "p_scope": "NULL", "p_tags": "NULL", "p_category": "NULL",
}  # fmt: skip
#: [retrieval] ann_candidates' default: the HNSW path's candidates before the re-rank
CANDIDATES = 200


async def ann(store: Store, dsn: str, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Each HNSW-indexed partition: its ANN path against the exact path, per filter."""
    settings = settings_for(dsn, work)
    pool = await create_pool(dsn, settings.database)
    out: dict[str, Any] = {}
    try:
        async with pool.acquire() as conn:
            indexed = {
                r[0] for r in await conn.fetch("SELECT partition_key FROM amrita_memory.ann_index")
            }
            for p in range(store.first_small):
                name = store.name(p)
                if name not in indexed:
                    continue
                qs = store.queries([p], args.ann_queries, seed=50 + p)
                for fname, extra in FILTERS.items():
                    named = {**EXACT_ARGS, **{k: f"${i + 4}" for i, k in enumerate(extra)}}
                    listed = ", ".join(f"{k} => {v}" for k, v in named.items())
                    exact_sql = f"SELECT id FROM amrita_memory.search_vector_exact_v5({listed})"
                    ann_sql = (
                        f"SELECT id FROM amrita_memory.search_vector_ann_v5({listed}, "
                        f"p_candidates => {CANDIDATES})"
                    )
                    values = list(extra.values())
                    hits, exact_ms, ann_ms = 0, [], []
                    for q in qs:
                        async with conn.transaction():  # the ANN path's SET LOCALs end here
                            t = time.perf_counter()
                            got = await conn.fetch(ann_sql, name, q.vector, NOW, *values)
                            ann_ms.append((time.perf_counter() - t) * 1000)
                        t = time.perf_counter()
                        want = await conn.fetch(exact_sql, name, q.vector, NOW, *values)
                        exact_ms.append((time.perf_counter() - t) * 1000)
                        hits += len({r[0] for r in got} & {r[0] for r in want})
                    key = f"ann_{p}_{fname}"
                    out[f"{key}_recall"] = hits / (5 * len(qs))
                    out[f"{key}_ann_p50"] = p50(ann_ms)
                    out[f"{key}_exact_p50"] = p50(exact_ms)
                out[f"ann_{p}_rows"] = int(store.sizes[p])
    finally:
        await pool.close()
    return out


# ------------------------------------------------------------------------------ walks


async def walk_backup(
    store: Store, dsn: str, work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """``amrita-memory backup create``'s path: pg_dump + JSONL from one snapshot."""
    from amrita_memory_pg.bootstrap import open_store
    from amrita_memory_pg.maintenance.backup import create_backup

    async with open_store(settings_for(dsn, work)) as opened:
        t = time.perf_counter()
        info = await create_backup(opened, reason="manual")
        seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "jsonl": str(info.jsonl_path),
        "dump": str(info.dump_path),
        "jsonl_mb": info.jsonl_path.stat().st_size / 2**20,
        "dump_mb": info.dump_path.stat().st_size / 2**20,
    }


async def walk_restore(
    store: Store, dsn: str, work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """``amrita-memory backup restore FILE``'s path into an empty database (no safety
    backup is due: every table is empty)."""
    from amrita_memory_pg.bootstrap import open_store
    from amrita_memory_pg.cli.ops import fleet_leases
    from amrita_memory_pg.maintenance.restore import restore_held

    async with open_store(settings_for(dsn, work)) as opened:
        t = time.perf_counter()
        report = await restore_held(opened, fleet_leases(opened), Path(args.file))
        seconds = time.perf_counter() - t
    return {"seconds": seconds, "memories": report.counts.get("memory", 0)}


async def walk_sweep(
    store: Store, dsn: str, work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """One whole sweep pass as the service runs it: cold dry run, CHECKPOINT, warm pass."""
    from amrita_memory_pg.bootstrap import open_memory

    async with open_memory(settings_for(dsn, work), startup=False) as mem:
        t = time.perf_counter()
        await mem.memories.sweep(now=NOW, dry_run=True, force=True)
        dry = time.perf_counter() - t
        await mem.pool.execute("CHECKPOINT")
        t = time.perf_counter()
        report = await mem.memories.sweep(now=NOW, force=True)
        seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "dry_seconds": dry,
        "scanned": report.scanned,
        "demoted": report.demoted,
        "purged": report.purged,
    }


async def walk_tokens(
    store: Store, dsn: str, work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """``amrita-memory tokens backfill --all``: every memory's tokens made again."""
    from amrita_memory_pg.bootstrap import open_store
    from amrita_memory_pg.maintenance.tokens import backfill_tokens

    async with open_store(settings_for(dsn, work)) as opened:
        t = time.perf_counter()
        report = await backfill_tokens(opened.pool, retokenize=True)
        seconds = time.perf_counter() - t
    return {"seconds": seconds, "rows": report.tokenized, "rows_per_s": report.tokenized / seconds}


async def walk_reembed(
    store: Store, dsn: str, work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """The re-embed's database side: every row staged with the hashing embedder, then the
    switch (``reindex``; the ANN rebuild after it is timed apart, as the load's build)."""
    from amrita_memory_pg.bootstrap import open_store
    from amrita_memory_pg.embedding.hashing import HashingProvider
    from amrita_memory_pg.maintenance.reembed import reindex

    # another model of the same dimension (its own fingerprint): the partitions keep their
    # HNSW indexes, which the switch's UPDATE maintains row by row
    provider = HashingProvider(store.dim)
    provider.model = f"hash-{store.dim}-next"
    embedder = Embedder(provider)
    staged_at: list[float] = []

    def progress(done: int, total: int) -> None:
        if done >= total:  # every row staged: the switch comes next
            staged_at.append(time.perf_counter())

    async with open_store(settings_for(dsn, work)) as opened:
        t = time.perf_counter()
        report = await reindex(
            opened.pool,
            embedder,
            batch_size=opened.settings.embedding.reembed_batch_size,
            progress=progress,
        )
        seconds = time.perf_counter() - t
    rows = report.embedded + report.resumed
    staging = (staged_at[0] if staged_at else t + seconds) - t
    return {
        "seconds": seconds,
        "rows": rows,
        "rows_per_s": rows / seconds,
        "staging_s": staging,
        "switch_s": seconds - staging,
    }


# ------------------------------------------------------------------------------ one size


async def copy_database(admin: Any, name: str, source: str) -> None:
    await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    await admin.execute(f"CREATE DATABASE {name} TEMPLATE {source} STRATEGY FILE_COPY")


async def measure(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Every figure at one size, on a server of its own."""
    store = Store(n, NOW)
    work = Path(tempfile.mkdtemp(prefix=f"amrita_scale_{label(n)}_"))
    res: dict[str, Any] = {"rows": n, "partitions": store.partitions, "large": store.large}
    res["global_rows"] = int(store.sizes[0])
    res["when"] = datetime.now(UTC).isoformat(timespec="seconds")
    res["load_average"] = os.getloadavg()[0]
    server = await L2.start_with_buffers(work, args.shared_buffers)
    try:
        admin = await asyncpg.connect(server.dsn("postgres"))
        res["shared_buffers"] = await admin.fetchval("SHOW shared_buffers")
        postmaster = server.postmaster_pid()
        say(
            f"{label(n)}: {n:,} memories in {store.partitions:,} partitions "
            f"(global {store.sizes[0]:,}, large {store.large}), shared_buffers "
            f"{res['shared_buffers']}, load average {res['load_average']:.1f}"
        )
        await admin.execute("CREATE DATABASE scale")
        dsn = server.dsn("scale")
        await migrate.upgrade(dsn)
        settings = settings_for(dsn, work)
        pool = await create_pool(dsn, settings.database)
        try:
            async with pool.acquire() as conn:
                res["load_s"] = await load(conn, store, create_embedder(settings.embedding))
                say(f"load {res['load_s']:.0f} s")
            t = time.perf_counter()
            # as with [injection] enabled (the block is measured so): the block indexes too
            await maintain_configured(pool, settings_for(dsn, work, **{"injection.enabled": True}))
            res["ann_build_s"] = time.perf_counter() - t
            say(
                f"HNSW, keyword and block indexes of the large partitions {res['ann_build_s']:.0f} s"
            )
            async with pool.acquire() as conn:
                t = time.perf_counter()
                await conn.execute("VACUUM (ANALYZE) amrita_memory.memory")
                await conn.execute("VACUUM (ANALYZE) amrita_memory.memory_change")
                await L2.vacuum_counts(conn)
                await conn.execute("CHECKPOINT")
                res["vacuum_s"] = time.perf_counter() - t
                res["bytes"] = await relation_bytes(conn)
        finally:
            await pool.close()
        b = res["bytes"]
        say(
            f"rows {b['row_bytes']} B, table + indexes {(b['heap'] + b['toast'] + b['indexes']) / n:,.0f} "
            f"B a memory, database {b['database'] / 2**20:,.0f} MB"
        )

        async def child(task: str, db: str, *extra: str) -> Child:
            say(f"{task} on {db} …")
            got = await run_child(task, server.dsn(db), work / task, n, admin, postmaster, *extra)
            say(
                f"{task}: {got.seconds:.1f} s, peak RSS {got.max_rss_mb:.0f} MB, server "
                f"backends' peak private memory {got.server_anon_mb:.0f} MB (others "
                f"{got.background_anon_mb:.0f} MB), temp files {got.temp_mb:.0f} MB"
            )
            return got

        scale = await asyncpg.connect(dsn)  # the serve phase's hit ratio from here
        await scale.execute("SELECT pg_stat_reset()")
        await scale.close()
        served = await child(
            "serve", "scale", "--queries", str(args.queries), "--writes", str(args.writes),
            "--turns", str(args.turns),
        )  # fmt: skip
        res["serve"] = served.result
        res["bot_rss_mb"] = served.result["rss_end_mb"]
        hits = await admin.fetchrow(
            "SELECT blks_hit, blks_read FROM pg_stat_database WHERE datname = 'scale'"
        )
        assert hits is not None
        res["hit_ratio"] = hits[0] / max(1, hits[0] + hits[1])
        if store.large or store.sizes[0] >= settings.retrieval.ann_min_rows:
            res["ann"] = (
                await child("ann", "scale", "--ann-queries", str(args.ann_queries))
            ).result
        walks: dict[str, dict[str, Any]] = {}

        def record(name: str, got: Child) -> None:
            walks[name] = {
                **got.result,
                "wall_s": got.seconds,
                "max_rss_mb": got.max_rss_mb,
                "server_anon_mb": got.server_anon_mb,
                "background_anon_mb": got.background_anon_mb,
                "temp_mb": got.temp_mb,
            }

        skip = set(args.skip)
        backup: Child | None = None
        if not {"backup", "restore-dump", "restore-jsonl"} <= skip:
            backup = await child("backup", "scale")
            record("backup", backup)
        for kind, key in (("dump", "restore-dump"), ("jsonl", "restore-jsonl")):
            if key in skip or backup is None:
                continue
            target = f"restore_{kind}"
            await admin.execute(f"CREATE DATABASE {target}")
            await migrate.upgrade(server.dsn(target))
            record(key, await child("restore", target, "--file", backup.result[kind]))
            await admin.execute(f"DROP DATABASE {target} WITH (FORCE)")
        # the walks that change rows run on copies: the store stays as loaded (--keep)
        for task in ("sweep", "tokens", "reembed"):
            if task in skip:
                continue
            await copy_database(admin, f"walk_{task}", "scale")
            record(task, await child(task, f"walk_{task}"))
            await admin.execute(f"DROP DATABASE walk_{task} WITH (FORCE)")
        res["walks"] = walks
        await admin.close()
    finally:
        server.stop()
        if args.keep:
            say(f"kept: {work} (the loaded store is database scale of the server in {work}/pg)")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return res


# ------------------------------------------------------------------------------ report


@dataclass
class Figure:
    """One row of the table and, when ``plot``, one panel of the picture."""

    name: str
    unit: str
    get: Callable[[dict[str, Any]], float | None]
    plot: bool = True
    fmt: str = "{:.3f}"
    panel: str = ""
    notes: list[str] = field(default_factory=list)


def walk(name: str, key: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda r: r.get("walks", {}).get(name, {}).get(key)


def big(r: dict[str, Any], mode: str, which: str) -> float | None:
    """A read p50 in the largest partition (``large``) or in global."""
    serve = r.get("serve", {})
    p = 0 if which == "global" else 1
    if which == "large" and not r.get("large"):
        return None
    value = serve.get(f"big_{p}_{mode}_p50")
    return None if value is None else float(value)


def ann_worst(r: dict[str, Any], what: str) -> float | None:
    """Over the indexed partitions and filters: the lowest recall, or the highest time ratio."""
    a = r.get("ann")
    if not a:
        return None
    keys = {k.rsplit("_", 1)[0] for k in a if k.endswith("_recall")}
    if not keys:
        return None
    if what == "recall":
        return float(min(a[f"{k}_recall"] for k in keys))
    return float(max(a[f"{k}_ann_p50"] / a[f"{k}_exact_p50"] for k in keys))


def per_memory(key: str, *more: str) -> Callable[[dict[str, Any]], float | None]:
    def get(r: dict[str, Any]) -> float | None:
        b = r.get("bytes")
        return None if not b else sum(b[k] for k in (key, *more)) / r["rows"]

    return get


FIGURES = [
    Figure("SELECT 1 floor p50", "ms", lambda r: r["serve"]["floor_p50"], panel="reads"),
    Figure("hybrid read (default) p50", "ms", lambda r: r["serve"]["read_hybrid_p50"], panel="reads"),
    Figure("hybrid read (default) p95", "ms", lambda r: r["serve"]["read_hybrid_p95"], panel="reads"),
    Figure("vector read p50", "ms", lambda r: r["serve"]["read_vector_p50"], panel="reads"),
    Figure("vector read p95", "ms", lambda r: r["serve"]["read_vector_p95"], panel="reads", plot=False),
    Figure("keyword read p50", "ms", lambda r: r["serve"]["read_keyword_p50"], panel="reads"),
    Figure("keyword read p95", "ms", lambda r: r["serve"]["read_keyword_p95"], panel="reads", plot=False),
    Figure(
        "hybrid p50 / floor", "×",
        lambda r: r["serve"]["read_hybrid_p50"] / r["serve"]["floor_p50"], panel="ratios", fmt="{:.1f}",
    ),
    Figure(
        "hybrid p95 / floor", "×",
        lambda r: r["serve"]["read_hybrid_p95"] / r["serve"]["floor_p50"], panel="ratios", fmt="{:.1f}",
    ),
    Figure(
        "write p50 / floor", "×",
        lambda r: r["serve"]["write_p50"] / r["serve"]["floor_p50"], panel="ratios", fmt="{:.1f}",
    ),
    Figure("hybrid read p50, largest group", "ms", lambda r: big(r, "hybrid", "large"), panel="large"),
    Figure("vector read p50, largest group", "ms", lambda r: big(r, "vector", "large"), panel="large"),
    Figure("keyword read p50, largest group", "ms", lambda r: big(r, "keyword", "large"), panel="large"),
    Figure("hybrid read p50, global", "ms", lambda r: big(r, "hybrid", "global"), panel="large"),
    Figure("write p50", "ms", lambda r: r["serve"]["write_p50"], panel="writes"),
    Figure("write p95", "ms", lambda r: r["serve"]["write_p95"], panel="writes", plot=False),
    Figure("write p50, largest group (HNSW)", "ms", lambda r: r["serve"].get("write_large_p50"), panel="writes"),
    Figure("memory block p50 (default)", "ms", lambda r: r["serve"]["block_default_p50"], panel="writes"),
    Figure("memory block p50 (injection on)", "ms", lambda r: r["serve"]["block_injection_p50"], panel="writes"),
    Figure("block query p50, injection on, v2 (0.14)", "ms", lambda r: r["serve"].get("block_db_v2_p50"), panel="writes", plot=False),
    Figure("block query p50, injection on, v3", "ms", lambda r: r["serve"].get("block_db_v3_p50"), panel="writes", plot=False),
    Figure("HNSW recall@5 of exact, worst filter", "", lambda r: ann_worst(r, "recall"), panel="fractions", fmt="{:.3f}"),
    Figure("HNSW time / exact time, worst filter", "×", lambda r: ann_worst(r, "ratio"), panel="fractions", fmt="{:.2f}"),
    Figure("sweep of the whole table", "s", walk("sweep", "seconds"), panel="walks", fmt="{:.1f}"),
    Figure("backup (pg_dump + JSONL)", "s", walk("backup", "seconds"), panel="walks", fmt="{:.1f}"),
    Figure("restore of the dump", "s", walk("restore-dump", "seconds"), panel="walks", fmt="{:.1f}"),
    Figure("restore of the JSONL", "s", walk("restore-jsonl", "seconds"), panel="walks", fmt="{:.1f}"),
    Figure("re-embed (hashing embedder)", "rows/s", walk("reembed", "rows_per_s"), panel="rates", fmt="{:,.0f}"),
    Figure("  re-embed: staging", "s", walk("reembed", "staging_s"), plot=False, fmt="{:.1f}"),
    Figure("  re-embed: the switch", "s", walk("reembed", "switch_s"), plot=False, fmt="{:.1f}"),
    Figure("token backfill --all", "rows/s", walk("tokens", "rows_per_s"), panel="rates", fmt="{:,.0f}"),
    Figure("load (COPY + trigger)", "s", lambda r: r.get("load_s"), panel="walks", fmt="{:.0f}", plot=False),
    Figure("HNSW + keyword index build", "s", lambda r: r.get("ann_build_s"), fmt="{:.0f}", plot=False),
    Figure("memory table + indexes per memory", "B", per_memory("heap", "toast", "indexes"), panel="bytes", fmt="{:,.0f}"),
    Figure("  of which heap + TOAST", "B", per_memory("heap", "toast"), panel="bytes", fmt="{:,.0f}"),
    Figure("  of which HNSW + keyword indexes", "B", per_memory("ann", "keyword"), panel="bytes", fmt="{:,.0f}"),
    Figure("change history per memory", "B", per_memory("history"), panel="bytes", fmt="{:,.0f}"),
    Figure("database per memory", "B", per_memory("database"), panel="bytes", fmt="{:,.0f}"),
    Figure("shared_buffers hit ratio (serve)", "", lambda r: r.get("hit_ratio"), panel="fractions", fmt="{:.4f}"),
    Figure("bot process RSS after serving", "MB", lambda r: r.get("bot_rss_mb"), panel="rss", fmt="{:.0f}"),
    Figure("peak RSS: backup", "MB", walk("backup", "max_rss_mb"), panel="rss", fmt="{:.0f}"),
    Figure("peak RSS: restore of the dump", "MB", walk("restore-dump", "max_rss_mb"), panel="rss", fmt="{:.0f}"),
    Figure("peak RSS: restore of the JSONL", "MB", walk("restore-jsonl", "max_rss_mb"), panel="rss", fmt="{:.0f}"),
    Figure("peak RSS: sweep", "MB", walk("sweep", "max_rss_mb"), panel="rss", fmt="{:.0f}"),
    Figure("peak RSS: token backfill", "MB", walk("tokens", "max_rss_mb"), panel="rss", fmt="{:.0f}"),
    Figure("peak RSS: re-embed", "MB", walk("reembed", "max_rss_mb"), panel="rss", fmt="{:.0f}"),
    Figure(
        "server: the walk's backend, peak private memory", "MB",
        lambda r: max((w.get("server_anon_mb", 0) for w in r.get("walks", {}).values()), default=None),
        panel="rss", fmt="{:.0f}",
    ),
    Figure(
        "server: autovacuum and other processes, peak", "MB",
        lambda r: max((w.get("background_anon_mb", 0) for w in r.get("walks", {}).values()), default=None),
        plot=False, fmt="{:.0f}",
    ),
    Figure(
        "server temp files, any walk", "MB",
        lambda r: max((w.get("temp_mb", 0) for w in r.get("walks", {}).values()), default=None),
        plot=False, fmt="{:.0f}",
    ),
]  # fmt: skip

PANELS = {
    "reads": "reads in small partitions (ms)",
    "ratios": "× the SELECT 1 floor",
    "large": "reads in large partitions (ms)",
    "writes": "writes and memory block (ms)",
    "fractions": "HNSW recall, HNSW/exact time, hit ratio",
    "walks": "whole-table walks (s)",
    "rates": "walk throughput (rows/s)",
    "bytes": "bytes per memory",
    "rss": "bot and walks, peak memory (MB)",
}
#: panels drawn on a log scale (their figures span orders of magnitude)
LOG_PANELS = {"reads", "large", "walks"}


def cell(figure: Figure, r: dict[str, Any]) -> str:
    try:
        value = figure.get(r)
    except (KeyError, ZeroDivisionError, TypeError):
        value = None
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return figure.fmt.format(value)


def render_table(results: dict[str, dict[str, Any]]) -> str:
    ordered = sorted(results.values(), key=lambda r: r["rows"])
    head = "| figure | unit | " + " | ".join(label(r["rows"]) for r in ordered) + " |"
    lines = [head, "|---|---|" + "---:|" * len(ordered)]
    lines.append(
        "| partitions (global; large groups) | | "
        + " | ".join(
            f"{r['partitions']:,} ({r['global_rows']:,}; {', '.join(f'{x:,}' for x in r['large']) or '—'})"
            for r in ordered
        )
        + " |"
    )
    for figure in FIGURES:
        lines.append(
            f"| {figure.name} | {figure.unit} | "
            + " | ".join(cell(figure, r) for r in ordered)
            + " |"
        )
    lines.append(
        "| load average at the start / shared_buffers | | "
        + " | ".join(f"{r['load_average']:.1f} / {r['shared_buffers']}" for r in ordered)
        + " |"
    )
    return "\n".join(lines)


def render_plot(results: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = sorted(results.values(), key=lambda r: r["rows"])
    xs = [r["rows"] for r in ordered]
    cols = 5
    rows = math.ceil(len(PANELS) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 3.6, rows * 3.0), squeeze=False)
    for ax, (panel, title) in zip(axes.flat, PANELS.items(), strict=False):
        for figure in FIGURES:
            if figure.panel != panel or not figure.plot:
                continue
            points = []
            for x, r in zip(xs, ordered, strict=True):
                try:
                    value = figure.get(r)
                except (KeyError, ZeroDivisionError, TypeError):
                    value = None
                if value is not None and not (isinstance(value, float) and math.isnan(value)):
                    points.append((x, value))
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=figure.name.strip(), lw=1.2)
        ax.set_xscale("log")
        if panel in LOG_PANELS:
            ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.set_xticks(xs, [label(x) for x in xs])
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(PANELS) :]:
        ax.axis("off")
    fig.suptitle("amrita_memory_pg by store size (bench/bench_scale.py)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


def render(args: argparse.Namespace) -> None:
    results = json.loads(args.json.read_text()) if args.json.exists() else {}
    if not results:
        sys.exit(f"no results in {args.json}")
    table = render_table(results)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n", encoding="utf-8")
    if args.png:
        render_plot(results, args.png)
        print(f"# plot: {args.png}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command")
    kid = sub.add_parser("child", help=argparse.SUPPRESS)
    kid.add_argument("task")
    kid.add_argument("--dsn", required=True)
    kid.add_argument("--work", required=True)
    kid.add_argument("--rows", type=int, required=True)
    kid.add_argument("--out", required=True)
    kid.add_argument("--queries", type=int, default=1000)
    kid.add_argument("--writes", type=int, default=500)
    kid.add_argument("--turns", type=int, default=500)
    kid.add_argument("--ann-queries", type=int, default=100)
    kid.add_argument("--file", default="")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="store sizes, e.g. 10k,100k,1M")
    parser.add_argument("--queries", type=int, default=1000, help="reads per mode")
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--turns", type=int, default=500, help="memory blocks timed")
    parser.add_argument("--ann-queries", type=int, default=100, help="per partition and filter")
    parser.add_argument("--shared-buffers", default="512MB")
    parser.add_argument(
        "--skip", type=lambda s: [x for x in s.split(",") if x], default=[],
        help=f"walks to leave out: {', '.join(WALKS)}",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="results by size (merged)")
    parser.add_argument("--markdown", type=Path, help="write the table here too")
    parser.add_argument("--png", type=Path, help="draw the plot here")
    parser.add_argument("--render", action="store_true", help="only render --json")
    parser.add_argument(
        "--keep", action="store_true", help="keep each size's server and loaded store"
    )
    args = parser.parse_args()
    if args.command == "child":
        child_main(args)
        return
    if not args.render:
        for n in (parse_size(s) for s in args.sizes.split(",")):
            started = time.perf_counter()
            result = asyncio.run(measure(n, args))
            result["bench_s"] = time.perf_counter() - started
            results = json.loads(args.json.read_text()) if args.json.exists() else {}
            results[str(n)] = result
            args.json.write_text(json.dumps(results, indent=1))
            say(f"{label(n)} done in {result['bench_s'] / 60:.1f} min; results in {args.json}")
    render(args)


if __name__ == "__main__":
    main()
