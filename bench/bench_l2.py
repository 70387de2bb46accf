"""L2 benchmark: our SQL functions against the reference plugin's approach, side by side.

Not a test: it loads N synthetic memories and prints, in one run, our numbers (PostgreSQL
+ pgvector, the product's own named queries ``search_memories`` and ``insert_memory`` from
``sql/queries/memories.sql``, i.e. ``search_memories_v4`` (vector mode) and ``insert_memory_v3`` with
their model checks) next to the reference's approach on real
ChromaDB (``where`` filter + 3x overfetch + Python re-rank for reads; count-then-add for
writes; read-all-metadata-then-update for the sweep, reference §3.2/§5.2).

Database time only: vectors are precomputed (random unit vectors), so no embedding model
runs; every timing is the client-side wall time of the call(s), round trips included.
The floor is a ``SELECT 1`` round trip on the same connection.

    .venv/bin/python bench/bench_l2.py                      # 100k rows / 1000 partitions / 384-d
    .venv/bin/python bench/bench_l2.py --rows 10000 --partitions 100
    .venv/bin/python bench/bench_l2.py --dim 1024
    .venv/bin/python bench/bench_l2.py --big-partition 100000   # plus one 100k-row partition
    .venv/bin/python bench/bench_l2.py --rows 1000000 --partitions 10000 --no-reference

Data: importance uniform 1-10, ages uniform over 0..33 days, which makes about a third
of the rows due for demotion or purge under the default tiers (7 d / 25.1 d / 90 d).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import asyncpg
import numpy as np
import numpy.typing as npt

from amrita_memory_pg.domain import decay
from amrita_memory_pg.domain.decay import DecayPolicy
from amrita_memory_pg.maintenance.ann import maintain_ann_indexes
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.storage.memories import MemoryRepository
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import create_pool
from amrita_memory_pg.storage.pg.embedded import start_embedded
from amrita_memory_pg.storage.pgvector import PgvectorBackend
from amrita_memory_pg.storage.queries import query

try:  # a revision with search parameter objects (0.5.0 on); older ones: positional
    from amrita_memory_pg.domain.records import MemoryQuery, Ranking
    from amrita_memory_pg.storage.pgvector import search_statement
except ImportError:  # pragma: no cover - depends on the revision benched
    search_statement = None  # type: ignore[assignment]

FINGERPRINT = "bench"
MAX_AGE_DAYS = 33.1
TOP_K = 5
CHUNK = 10_000
COMMON_WORDS, RARE_WORDS, COMMON_PER_TEXT = 20, 3000, 2
LEVEL = {1: "low", 2: "low", 3: "low", 4: "medium", 5: "medium", 6: "medium", 7: "medium"}

Vectors = npt.NDArray[np.float32]
#: a plain connection or one borrowed from a pool
Conn = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy


# ------------------------------------------------------------------------------ data


@dataclass(frozen=True)
class Chunk:
    start: int
    ids: list[str]
    vectors: Vectors
    importance: npt.NDArray[np.int64]
    ages: npt.NDArray[np.float64]
    #: each memory's text: its words (the search tokens too, see words())
    texts: list[str]
    #: with --cjk-chars: each text's search tokens as the product makes them (else None)
    tokens: list[list[str]] | None = None


@dataclass(frozen=True)
class Dataset:
    """Deterministic synthetic memories, generated chunk by chunk (1M x 1024-d is 4 GB)."""

    rows: int
    partitions: int
    dim: int
    now: datetime
    big_partition: int = 0
    seed: int = 7
    #: > 0: texts of this many CJK characters, tokenized by the product (realistic row sizes)
    cjk_chars: int = 0

    @property
    def total(self) -> int:
        return self.rows + self.big_partition

    def partition_of(self, i: int) -> str:
        if i >= self.rows:
            return "QQPlatform_Group_big"
        return f"QQPlatform_Private_{10000 + i % self.partitions}"

    def chunks(self) -> Iterator[Chunk]:
        """The rows, CHUNK at a time, the same on every call."""
        for start in range(0, self.total, CHUNK):
            n = min(CHUNK, self.total - start)
            rng = np.random.default_rng([self.seed, start])
            # Random ids like the product's (uuid hex): id order, which the sweep walks, is
            # unrelated to the physical (insertion) order, as in a real table.
            ids = [rng.bytes(16).hex() for _ in range(n)]
            vectors = unit(rng.standard_normal((n, self.dim), dtype=np.float32))
            importance = rng.integers(1, 11, n)
            ages = rng.uniform(0.0, MAX_AGE_DAYS, n)
            if self.cjk_chars:
                texts = cjk_texts(rng, n, self.cjk_chars)
                yield Chunk(start, ids, vectors, importance, ages, texts, product_tokens(texts))
            else:
                yield Chunk(start, ids, vectors, importance, ages, words(rng, n, COMMON_PER_TEXT))

    def queries(self, n: int, *, seed: int = 99) -> Vectors:
        return unit(np.random.default_rng(seed).standard_normal((n, self.dim), dtype=np.float32))

    def query_tokens(self, n: int, *, seed: int = 98) -> list[list[str]]:
        """A query's search tokens: one common word and two rare ones (see words()); with
        --cjk-chars, the product's tokens of a 6-character query."""
        rng = np.random.default_rng(seed)
        if self.cjk_chars:
            return product_tokens(cjk_texts(rng, n, 6))
        return [t.split() for t in words(rng, n, 1, rare=2)]

    def small_partitions(self) -> list[str]:
        return [self.partition_of(i) for i in range(min(self.rows, self.partitions))]


def words(rng: np.random.Generator, n: int, common: int, *, rare: int = 8) -> list[str]:
    """n texts of `common` words of 20 (each in ~10% of memories, like 的 or "the") and
    `rare` of 3,000 (each in ~0.3% of them): a hybrid query shares a token with about a
    tenth of a partition, a keyword search finds a handful of rows."""
    c = rng.integers(0, COMMON_WORDS, (n, common))
    r = rng.integers(0, RARE_WORDS, (n, rare))
    return [
        " ".join([f"c{x}" for x in cs] + [f"r{x}" for x in rs])
        for cs, rs in zip(c.tolist(), r.tolist(), strict=True)
    ]


#: 429 common CJK characters: a 33-character text has ~50 distinct bigram tokens
CJK = [chr(0x4E00 + i) for i in range(0, 3000, 7)]


def cjk_texts(rng: np.random.Generator, n: int, chars: int) -> list[str]:
    """n texts of ``chars`` CJK characters: the size of real Chinese memories (33
    characters and their tokens make a 2.3 KB row at 384-d, past PostgreSQL's 2 KB toasting
    threshold; the default texts make 1.8 KB rows)."""
    picks = rng.integers(0, len(CJK), (n, chars)).tolist()
    return ["".join(CJK[k] for k in row) for row in picks]


def product_tokens(texts: list[str]) -> list[list[str]]:
    """The search tokens the product writes for each text (revisions with tokens only)."""
    from amrita_memory_pg.domain.tokens import search_tokens

    return [search_tokens(t) for t in texts]


def unit(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / norms, dtype=np.float32)


def due_share(ds: Dataset) -> tuple[int, int]:
    """Rows the sweep will demote and purge (the pure twin of the SQL decision)."""
    demote = purge = 0
    for chunk in ds.chunks():
        for imp, age in zip(chunk.importance.tolist(), chunk.ages.tolist(), strict=True):
            action = decay.sweep_action(imp, age, 7.0, 90.0)
            demote += action == "demote"
            purge += action == "purge"
    return demote, purge


# ------------------------------------------------------------------------------ timing


@dataclass
class Timings:
    samples: list[float] = field(default_factory=list)

    def add(self, seconds: float) -> None:
        self.samples.append(seconds * 1000.0)

    def pct(self, q: float) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, math.floor(q * len(ordered)))]

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return self.pct(0.95)


async def timed(n: int, call: Callable[[int], Awaitable[Any]]) -> Timings:
    out = Timings()
    for i in range(n):
        t = time.perf_counter()
        await call(i)
        out.add(time.perf_counter() - t)
    return out


def timed_sync(n: int, call: Callable[[int], Any]) -> Timings:
    out = Timings()
    for i in range(n):
        t = time.perf_counter()
        call(i)
        out.add(time.perf_counter() - t)
    return out


# ------------------------------------------------------------------------------ ours


def bench_settings(data_dir: Path) -> Settings:
    return load_settings(
        env={},
        read_default_files=False,
        # Index builds and VACUUM of 1M rows take minutes: no statement timeout here.
        overrides={
            "data_dir": str(data_dir),
            "embedding.protocol": "hash",
            "database.command_timeout": 3600,
            "database.statement_timeout": 0,
        },
    )


async def vacuum_counts(conn: Conn) -> None:
    """VACUUM the kept partition counts (0.15.0 and later) after a load.

    The load's every chunk updates the count row of each partition it touches, so a loaded
    store's count table holds about one dead version per row and chunk. A running bot's
    autovacuum removes them within a minute; left in place, the first timed writes would
    pay for pruning them (one page at a time), which no steady-state write does."""
    if await conn.fetchval("SELECT to_regclass('amrita_memory.partition_count') IS NOT NULL"):
        await conn.execute("VACUUM (ANALYZE) amrita_memory.partition_count")


async def load_postgres(conn: Conn, ds: Dataset) -> float:
    """COPY the dataset into amrita_memory.memory; returns seconds.

    Through a staging table, so that the search tokens (the words themselves: no
    tokenizer, the same on every revision) are written with the row, not by a later
    UPDATE that would leave every page half empty (and the sweep's updates all HOT)."""
    t = time.perf_counter()
    await conn.execute(
        "UPDATE amrita_memory.store_meta SET embed_fingerprint = $1, embed_dim = $2 WHERE id = 1",
        FINGERPRINT,
        ds.dim,
    )
    columns = ["id", "partition_key", "scope", "content", "importance", "created_at"]
    columns += ["updated_at", "tier_since", "embedding", "embed_fingerprint"]
    listed = ", ".join(columns)
    await conn.execute(
        f"CREATE TEMP TABLE bench_load AS SELECT {listed} FROM amrita_memory.memory WITH NO DATA"
    )
    tokens = await has_tokens(conn)
    if ds.cjk_chars:
        await conn.execute("ALTER TABLE bench_load ADD COLUMN tok text[]")
    for chunk in ds.chunks():
        records = []
        for j, rid in enumerate(chunk.ids):
            i = chunk.start + j
            created = ds.now - timedelta(days=float(chunk.ages[j]))
            records.append(
                (
                    rid,
                    ds.partition_of(i),
                    "group" if i >= ds.rows else "user",
                    chunk.texts[j],
                    int(chunk.importance[j]),
                    created,
                    created,
                    created,
                    chunk.vectors[j],
                    FINGERPRINT,
                    *([chunk.tokens[j]] if chunk.tokens is not None else []),
                )
            )
        await conn.copy_records_to_table(
            "bench_load", columns=columns + (["tok"] if ds.cjk_chars else []), records=records
        )
        made = "tok" if ds.cjk_chars else "string_to_array(content, ' ')"
        extra = (", search_tokens", f", array_to_tsvector({made})")
        await conn.execute(
            f"INSERT INTO amrita_memory.memory ({listed}{extra[0] if tokens else ''}) "
            f"SELECT {listed}{extra[1] if tokens else ''} FROM bench_load"
        )
        await conn.execute("TRUNCATE bench_load")
    await conn.execute("DROP TABLE bench_load")
    await conn.execute("ANALYZE amrita_memory.memory")
    # A live store's history was trimmed by its last sweep run: trim_history_v2 (sweep_v6.sql)
    # keeps a watermark and the next run walks only the memories changed since. Without
    # this the timed run would be the store's very first trim (a walk of every memory's
    # history, ~0.1 s per 100k), which a bot pays once. Older schemas have no watermark.
    if await conn.fetchval("SELECT to_regproc('amrita_memory.trim_history_v2') IS NOT NULL"):
        await conn.execute("SELECT * FROM amrita_memory.trim_history_v2(20, 30)")
    return time.perf_counter() - t


async def has_tokens(conn: Conn) -> bool:
    """Whether this revision's schema has search tokens (hybrid and keyword search)."""
    return bool(
        await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = "
            "'amrita_memory' AND table_name = 'memory' AND column_name = 'search_tokens')"
        )
    )


async def pg_search(
    conn: Conn,
    partition: str,
    vector: Vectors,
    now: datetime,
    *,
    mode: str = "vector",
    tokens: Sequence[str] = (),
    decay: bool = True,
    k: int = TOP_K,
) -> Any:
    """The product's search statement (PgvectorBackend.search): decay on with the default
    half-life 30 d, boost 1, floor 0.05, no filters, 200 HNSW candidates, rrf fusion."""
    if search_statement is not None:  # this revision binds a MemoryQuery by name
        sql, args = search_statement(
            MemoryQuery(
                partition,
                None if mode == "keyword" else vector,
                now,
                top_k=k,
                ranking=Ranking(mode=mode, tokens=tuple(tokens)),  # type: ignore[arg-type]
                decay=DecayPolicy(enabled=decay),
            ),
            200,
        )
        return await conn.fetch(sql, *args)
    return await conn.fetch(
        query("search_memories"),
        partition, None if mode == "keyword" else vector, list(tokens), mode, k, now, decay,
        30.0, 1.0, 0.05, None, None, None, None, None, 200, "rrf", 60.0, 0.5,
    )  # fmt: skip


async def pg_write(
    conn: Conn,
    partition: str,
    vector: Vectors,
    now: datetime,
    cap: int,
    *,
    fingerprint: str = FINGERPRINT,
) -> None:
    """The product's insert statement (MemoryRepository.add), model checks included."""
    row = await conn.fetchrow(
        query("insert_memory"),
        partition, "user", "benchmark write", [], 5, None, "auto", None,
        vector, fingerprint, now, cap, ["benchmark", "write"], None, None, None,
    )  # fmt: skip
    if row is None or row["id"] is None:
        raise RuntimeError(f"write refused in {partition}: partition full")


async def pg_sweep(pool: asyncpg.Pool, settings: Settings, now: datetime) -> tuple[float, Any]:
    """One full sweep pass, timed warm: a live bot's table is in the buffers.

    A dry-run pass first (read-only, same batches) brings the freshly cloned database
    into shared_buffers and is printed as the cold number; a CHECKPOINT then starts the
    timed pass with none in flight (every page it changes pays its full-page image).
    """
    # the sweep embeds nothing: the service runs without an embedder here
    repo = MemoryRepository(pool, PgvectorBackend(), cap=settings.per_session_memory_limit)
    store = MemoryService(repo, None, settings)  # type: ignore[arg-type]
    t = time.perf_counter()
    await store.sweep(now=now, dry_run=True)
    print(f"# sweep dry run (cold cache) {time.perf_counter() - t:.2f} s", flush=True)
    await pool.execute("CHECKPOINT")
    t = time.perf_counter()
    report = await store.sweep(now=now)
    return time.perf_counter() - t, report


def writes_into(
    conn: Conn, partitions: list[str], queries: Vectors, now: datetime
) -> Callable[[int], Awaitable[None]]:
    """The i-th timed write: spread over the partitions, under a cap (1000) never reached."""
    return lambda i: pg_write(
        conn, partitions[(i * 104729) % len(partitions)], queries[i % len(queries)], now, 1000
    )


# ------------------------------------------------------------------------------ reference


class Reference:
    """The reference plugin's storage approach on real ChromaDB (reference §3.2, §5)."""

    def __init__(self, path: Path, ds: Dataset) -> None:
        import chromadb

        self.client = chromadb.PersistentClient(path=str(path))
        self.col = self.client.get_or_create_collection("amrita_user_memory")
        self.ds = ds

    def load(self) -> float:
        t = time.perf_counter()
        batch = 5000
        for chunk in self.ds.chunks():
            for b in range(0, len(chunk.ids), batch):
                ids = chunk.ids[b : b + batch]
                metas, docs = [], []
                for j in range(b, b + len(ids)):
                    i = chunk.start + j
                    created = self.ds.now - timedelta(days=float(chunk.ages[j]))
                    docs.append(f"synthetic memory {i}")
                    metas.append(
                        {
                            "scope": "group" if i >= self.ds.rows else "user",
                            "user_id": self.ds.partition_of(i),
                            "tags": "",
                            "importance": LEVEL.get(int(chunk.importance[j]), "high"),
                            "created_at": created.isoformat(),
                        }
                    )
                self.col.add(
                    ids=ids,
                    embeddings=chunk.vectors[b : b + len(ids)],
                    documents=docs,
                    metadatas=metas,  # type: ignore[arg-type]
                )
        return time.perf_counter() - t

    def search(self, partition: str, query: Vectors, now: datetime) -> list[str]:
        """query(where user_id, n_results = top_k x 3), then the Python decay re-rank."""
        res = self.col.query(
            query_embeddings=cast(Any, [query]),
            n_results=TOP_K * 3,
            where={"user_id": partition},
            include=["documents", "metadatas", "distances"],
        )
        policy = decay.DecayPolicy()
        scored = []
        metas = (res["metadatas"] or [[]])[0]
        dists = (res["distances"] or [[]])[0]
        for rid, meta, dist in zip(res["ids"][0], metas, dists, strict=True):
            created = decay.parse_created_at(meta.get("created_at"))
            age = decay.age_days(created, now) if created else 0.0
            level = {"low": 2, "medium": 5, "high": 8}.get(str(meta.get("importance")), 5)
            scored.append((decay.decay_score(dist, age, level, policy), rid))
        scored.sort(key=lambda s: -s[0])
        return [rid for _, rid in scored[:TOP_K]]

    def write(self, partition: str, vector: Vectors, now: datetime, n: int, cap: int) -> None:
        """count (fetch every id of the partition), then add."""
        existing = self.col.get(where={"user_id": partition}, include=[])
        if len(existing["ids"]) >= cap:
            raise RuntimeError("partition full")
        self.col.add(
            ids=[f"w{n:031x}"],
            embeddings=cast(Any, [vector]),
            documents=["benchmark write"],
            metadatas=[
                {
                    "scope": "user",
                    "user_id": partition,
                    "tags": "",
                    "importance": "medium",
                    "created_at": now.isoformat(),
                }
            ],
        )

    def sweep(self, now: datetime) -> tuple[int, int, int]:
        """Page through all metadata, plan in Python, update/delete per partition (§5.3)."""
        groups: dict[str, list[str]] = {}
        scanned = offset = 0
        while True:
            page = self.col.get(include=["metadatas"], limit=1000, offset=offset)
            if not page["ids"]:
                break
            offset += len(page["ids"])
            for rid, meta in zip(page["ids"], page["metadatas"] or [], strict=True):
                scanned += 1
                if self._plan(meta, now)[0] != "keep":
                    groups.setdefault(str(meta.get("user_id", "")), []).append(rid)
        demoted = purged = 0
        # Re-fetch in slices: one get() with more ids than SQLite's 32,766 variables fails
        # (the reference's per-run budget, sweep_batch_limit, keeps it below that).
        slices = [ids[i : i + 5000] for ids in groups.values() for i in range(0, len(ids), 5000)]
        for ids in slices:
            fresh = self.col.get(ids=ids, include=["metadatas"])
            update_ids, update_metas, delete_ids = [], [], []
            for rid, meta in zip(fresh["ids"], fresh["metadatas"] or [], strict=True):
                action, level = self._plan(meta, now)
                if action == "demote":
                    update_ids.append(rid)
                    update_metas.append({**meta, "importance": level})
                elif action == "purge":
                    delete_ids.append(rid)
            if update_ids:
                self.col.update(ids=update_ids, metadatas=update_metas)  # type: ignore[arg-type]
                demoted += len(update_ids)
            if delete_ids:
                self.col.delete(ids=delete_ids)
                purged += len(delete_ids)
        return scanned, demoted, purged

    @staticmethod
    def _plan(meta: Any, now: datetime) -> tuple[str, str | None]:
        created = decay.parse_created_at(meta.get("created_at"))
        if created is None:
            return "keep", None
        level = {"low": 2, "medium": 5, "high": 8}.get(str(meta.get("importance")), 5)
        action = decay.sweep_action(level, decay.age_days(created, now), 7.0, 90.0)
        new = {8: "medium", 5: "low"}.get(level) if action == "demote" else None
        return action, new


# ------------------------------------------------------------------------------ run


@dataclass
class Row:
    label: str
    ours: str
    reference: str = "—"
    ratio: str = "—"


def ms(value: float) -> str:
    return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"


def compare(label: str, ours: float, ref: float | None, unit: str = "ms") -> Row:
    fmt = ms if unit == "ms" else (lambda v: f"{v:.2f} s")
    if ref is None:
        return Row(label, fmt(ours))
    return Row(label, fmt(ours), fmt(ref), f"{ref / ours:.0f}× faster" if ours else "—")


async def start_with_buffers(work: Path, shared_buffers: str) -> Any:
    """A throwaway embedded server in ``work`` with ``shared_buffers`` ('' = PostgreSQL's
    default): set, then restarted to apply."""
    server = await asyncio.to_thread(start_embedded, work)
    if shared_buffers:
        admin = await asyncpg.connect(server.dsn("postgres"))
        await admin.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
        await admin.close()
        server.stop()
        server = await asyncio.to_thread(start_embedded, work)
    return server


async def run(args: argparse.Namespace) -> list[Row]:
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    ds = Dataset(
        args.rows,
        args.partitions,
        args.dim,
        now,
        big_partition=args.big_partition,
        cjk_chars=args.cjk_chars,
    )
    if args.rows // args.partitions > 100:
        sys.exit("at most 100 memories per partition (the default cap): raise --partitions")
    work = Path(tempfile.mkdtemp(prefix="amrita_bench_"))
    rows: list[Row] = []
    server = await start_with_buffers(work, args.shared_buffers)
    settings = bench_settings(work)
    admin = await asyncpg.connect(server.dsn("postgres"))
    try:
        print(
            f"# {ds.rows:,} memories in {ds.partitions:,} partitions"
            + (f" + one partition of {ds.big_partition:,}" if ds.big_partition else "")
            + f", dim {ds.dim}; {args.queries} reads, {args.writes} writes; shared_buffers "
            + str(await admin.fetchval("SHOW shared_buffers")),
            flush=True,
        )
        demote, purge = due_share(ds)
        print(f"# due for the sweep: {demote:,} demotions + {purge:,} purges", flush=True)
        await admin.execute("CREATE DATABASE bench_src")
        await migrate.upgrade(server.dsn("bench_src"))
        pool = await create_pool(server.dsn("bench_src"), settings.database)
        async with pool.acquire() as conn:
            load_s = await load_postgres(conn, ds)
            print(f"# postgres load {load_s:.1f} s", flush=True)
            if ds.big_partition:
                t = time.perf_counter()
                await maintain_ann_indexes(pool, min_rows=settings.retrieval.ann_min_rows)
                print(f"# per-partition HNSW build {time.perf_counter() - t:.1f} s", flush=True)
            await conn.execute("VACUUM (ANALYZE) amrita_memory.memory")
            await vacuum_counts(conn)
            stored = await conn.fetchrow(
                "SELECT count(*) FILTER (WHERE pg_column_toast_chunk_id(embedding) IS NOT NULL)"
                " AS out_of_line, avg(pg_column_size(m.*))::int AS row_bytes"
                " FROM amrita_memory.memory m"
            )
            assert stored is not None
            print(
                f"# rows of {stored['row_bytes']:,} bytes; vectors out of line (TOAST): "
                f"{stored['out_of_line']:,}",
                flush=True,
            )
        await pool.close()
        # Each measurement that changes data runs on a fresh copy of the loaded database.
        for name in ("bench_sweep", "bench_hnsw"):
            await admin.execute(f"CREATE DATABASE {name} TEMPLATE bench_src")

        ref = None
        if not args.no_reference:
            ref = Reference(work / "chroma", ds)
            t = time.perf_counter()
            ref.load()
            print(f"# chroma load {time.perf_counter() - t:.1f} s", flush=True)

        queries = ds.queries(args.queries)
        words = ds.query_tokens(args.queries)
        partitions = ds.small_partitions()
        pool = await create_pool(server.dsn("bench_src"), settings.database)
        reads: dict[str, Timings] = {}
        big_reads: dict[str, Timings] = {}
        big_write = Timings([0.0])
        async with pool.acquire() as conn:
            modes = ["vector", "hybrid", "keyword"] if await has_tokens(conn) else ["vector"]
            floor = await timed(500, lambda i: conn.fetchval("SELECT 1"))

            def reader(mode: str, part: Callable[[int], str]) -> Callable[[int], Awaitable[Any]]:
                return lambda i: pg_search(
                    conn, part(i), queries[i], now, mode=mode, tokens=words[i]
                )

            def spread(i: int) -> str:
                return partitions[(i * 7919) % len(partitions)]

            for mode in modes:
                for i in range(20):  # warm the plan cache and the buffers
                    await reader(mode, lambda i: partitions[i % len(partitions)])(i)
                reads[mode] = await timed(args.queries, reader(mode, spread))
            wal = "SELECT wal_fpi, wal_bytes FROM pg_stat_wal"
            wal_before = await conn.fetchrow(wal)
            write = await timed(
                args.writes,
                writes_into(conn, partitions, queries, now),
            )
            await conn.execute("SELECT pg_stat_force_next_flush()")
            wal_after = await conn.fetchrow(wal)
            assert wal_before is not None
            assert wal_after is not None
            # Most of a write's cost after a checkpoint: a full-page image of every page it
            # touches first (the heap, each index, the history row and its key).
            print(
                f"# write WAL: {(wal_after[0] - wal_before[0]) / args.writes:.1f} full-page "
                f"images, {float(wal_after[1] - wal_before[1]) / args.writes / 1024:.1f} kB "
                "per write",
                flush=True,
            )
            recall = near_recall = None
            if ds.big_partition:
                big = "QQPlatform_Group_big"
                for mode in modes:
                    big_reads[mode] = await timed(args.queries, reader(mode, lambda i: big))
                recall = await ann_recall(conn, big, queries[: min(50, len(queries))], now)
                # Only the memory a query was made from is clearly nearest (the rest of
                # the synthetic data has no neighbourhoods), so recall@1 for those.
                near = await near_queries(conn, big, 50)
                near_recall = await ann_recall(conn, big, near, now, k=1)
                # The cap of a large partition: its count is what a write reads first.
                big_write = await timed(
                    args.writes,
                    lambda i: pg_write(
                        conn, big, queries[i % len(queries)], now, ds.big_partition + args.writes
                    ),
                )
        await pool.close()
        rows.append(Row("floor: SELECT 1 round trip (p50)", ms(floor.p50)))
        read = reads["vector"]

        ref_read = ref_write = None
        if ref is not None:
            ref_read = timed_sync(
                args.queries,
                lambda i: ref.search(partitions[(i * 7919) % len(partitions)], queries[i], now),
            )
            ref_write = timed_sync(
                args.writes,
                lambda i: ref.write(
                    partitions[(i * 104729) % len(partitions)],
                    queries[i % len(queries)],
                    now,
                    i,
                    1000,
                ),
            )
        rows.append(
            compare("read p50 (top 5 of a partition)", read.p50, ref_read.p50 if ref_read else None)
        )
        rows.append(compare("read p95", read.p95, ref_read.p95 if ref_read else None))
        for mode, label in (("hybrid", "hybrid read (default mode)"), ("keyword", "keyword read")):
            if mode in reads:
                rows.append(Row(f"{label} p50", ms(reads[mode].p50)))
                rows.append(Row(f"{label} p95", ms(reads[mode].p95)))
        rows.append(
            compare(
                "write p50 (cap check + insert)", write.p50, ref_write.p50 if ref_write else None
            )
        )
        if big_reads:
            ref_big = None
            if ref is not None:
                ref_big = timed_sync(
                    args.queries, lambda i: ref.search("QQPlatform_Group_big", queries[i], now)
                )
            path = "HNSW" if ds.big_partition >= settings.retrieval.ann_min_rows else "exact"
            rows.append(
                compare(
                    f"read p50, one {ds.big_partition:,}-row partition "
                    f"({path}; recall of the nearest: @1 {near_recall:.2f} for queries near a "
                    f"stored memory, @5 {recall:.2f} for uniform random queries)",
                    big_reads["vector"].p50,
                    ref_big.p50 if ref_big else None,
                )
            )
            for mode in ("hybrid", "keyword"):
                if mode in big_reads:
                    rows.append(
                        Row(
                            f"{mode} read p50, one {ds.big_partition:,}-row partition ({path})",
                            ms(big_reads[mode].p50),
                        )
                    )
            rows.append(
                Row(
                    f"write p50, one {ds.big_partition:,}-row partition (cap check + insert)",
                    ms(big_write.p50),
                )
            )

        if not args.no_sweep:
            rows.append(await compare_sweeps(server, settings, ref, now, demote + purge))

        if not args.skip_hnsw_sweep:
            print(render(rows), flush=True)  # the main table, before the long extra run
            try:
                rows.extend(await whole_table_hnsw(server, settings, ds, queries, partitions, now))
            except (asyncpg.PostgresError, TimeoutError, OSError) as exc:
                rows.append(Row("with a whole-table HNSW index", f"failed: {exc!r}"))
    finally:
        await admin.close()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return rows


async def compare_sweeps(
    server: Any, settings: Settings, ref: Reference | None, now: datetime, due: int
) -> Row:
    """Our sweep on a fresh copy of the loaded data, then the reference's, one full pass each."""
    pool = await create_pool(server.dsn("bench_sweep"), settings.database)
    sweep_s, report = await pg_sweep(pool, settings, now)
    await pool.close()  # a backend flushes its statistics when it exits
    stats = await asyncpg.connect(server.dsn("bench_sweep"))
    try:
        hot = await hot_share(stats)
        t = time.perf_counter()
        await stats.execute("VACUUM amrita_memory.memory")
        vacuum_s = time.perf_counter() - t
    finally:
        await stats.close()
    print(
        f"# our sweep {sweep_s:.2f} s: scanned {report.scanned:,}, demoted {report.demoted:,}, "
        f"purged {report.purged:,}; VACUUM after it {vacuum_s:.2f} s; "
        f"{hot:.0%} of demotions HOT",
        flush=True,
    )
    ref_sweep = None
    if ref is not None:
        t = time.perf_counter()
        scanned, demoted, purged = ref.sweep(now)
        ref_sweep = time.perf_counter() - t
        print(f"# reference sweep: scanned {scanned:,}, demoted {demoted:,}, purged {purged:,}")
    return compare(f"sweep of the whole table ({due:,} due)", sweep_s, ref_sweep, unit="s")


async def ann_recall(
    conn: Conn, partition: str, queries: Vectors, now: datetime, k: int = TOP_K
) -> float:
    """recall@k of the HNSW path (decay off: nearest first) against an exact scan.

    With decay on, the HNSW path re-ranks its nearest candidates, like the reference's
    overfetch; on random vectors every distance is about the same, so the decay factor
    alone would pick the "true" top 5 from anywhere in the partition. What the index is
    for — finding the nearest rows — is what this measures.
    """
    hits = 0
    for q in queries:
        rows = await pg_search(conn, partition, q, now, decay=False, k=k)
        exact = await conn.fetch(
            "SELECT id FROM amrita_memory.memory WHERE partition_key = $1 "
            "ORDER BY vector_l2_squared_distance(embedding, $2), id LIMIT $3",
            partition,
            q,
            k,
        )
        hits += len({r["id"] for r in rows} & {r["id"] for r in exact})
    return hits / (k * len(queries))


async def near_queries(conn: Conn, partition: str, n: int) -> Vectors:
    """Queries like real ones: close to some stored memory (its vector plus noise).

    Uniform random vectors in 384 dimensions are all about equally far from each other —
    the worst case for any ANN index, and unlike text embeddings.
    """
    rows = await conn.fetch(
        "SELECT embedding FROM amrita_memory.memory WHERE partition_key = $1 ORDER BY id LIMIT $2",
        partition,
        n,
    )
    base = np.stack([np.asarray(r["embedding"], dtype=np.float32) for r in rows])
    noise = np.random.default_rng(5).standard_normal(base.shape).astype(np.float32)
    return unit(base + 0.02 * noise)


async def hot_share(conn: Conn) -> float:
    """Share of the sweep's updates that were HOT (no index entry written)."""
    row = None
    for _ in range(50):  # the exited backends' statistics arrive asynchronously
        row = await conn.fetchrow(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
            "WHERE schemaname = 'amrita_memory' AND relname = 'memory'"
        )
        if row and row["n_tup_upd"]:
            break
        await asyncio.sleep(0.1)
    return (row["n_tup_hot_upd"] / row["n_tup_upd"]) if row and row["n_tup_upd"] else 0.0


async def whole_table_hnsw(
    server: Any,
    settings: Settings,
    ds: Dataset,
    queries: Vectors,
    partitions: list[str],
    now: datetime,
) -> list[Row]:
    """What the design avoids: one HNSW index over the whole table (writes/sweep pay for it)."""
    pool = await create_pool(server.dsn("bench_hnsw"), settings.database)
    try:
        t = time.perf_counter()
        await pool.execute(
            f"CREATE INDEX ix_bench_hnsw ON amrita_memory.memory USING hnsw "
            f"((embedding::vector({ds.dim})) vector_l2_ops)"
        )
        build = time.perf_counter() - t
        async with pool.acquire() as conn:
            write = await timed(
                200,
                writes_into(conn, partitions, queries, now),
            )
        sweep_s, _ = await pg_sweep(pool, settings, now)
        t = time.perf_counter()
        await pool.execute("VACUUM amrita_memory.memory")
        vacuum = time.perf_counter() - t
    finally:
        await pool.close()
    print(
        f"# whole-table HNSW: build {build:.1f} s, VACUUM after the sweep {vacuum:.2f} s",
        flush=True,
    )
    return [
        Row("with a whole-table HNSW index: write p50", ms(write.p50)),
        Row("with a whole-table HNSW index: sweep", f"{sweep_s:.2f} s"),
        Row("with a whole-table HNSW index: VACUUM after the sweep", f"{vacuum:.2f} s"),
    ]


def render(rows: list[Row]) -> str:
    lines = [
        "| measurement | ours (pgvector, SQL) | reference approach (chroma) | ratio |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {r.label} | {r.ours} | {r.reference} | {r.ratio} |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--big-partition", type=int, default=0, help="rows of one extra partition")
    parser.add_argument(
        "--cjk-chars",
        type=int,
        default=0,
        help="texts of N CJK characters with the product's tokens (33: real row sizes)",
    )
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--no-reference", action="store_true", help="ours only (no chroma)")
    parser.add_argument(
        "--skip-hnsw-sweep", action="store_true", help="skip the whole-table HNSW run"
    )
    parser.add_argument("--no-sweep", action="store_true", help="reads and writes only")
    parser.add_argument(
        "--shared-buffers",
        default="512MB",
        help="PostgreSQL shared_buffers of the benchmark's server ('' = PostgreSQL's 128MB)",
    )
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    table = render(asyncio.run(run(args)))
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
