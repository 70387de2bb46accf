"""halfvec against vector on ONE server: the same rows under both schemas, reads interleaved.

    .venv/bin/python bench/ab_halfvec.py                 # 100k memories, 1,000 partitions
    .venv/bin/python bench/ab_halfvec.py --rows 20000 --rounds 3

Two databases on one throwaway embedded PostgreSQL: one migrated to ``0061_partition_count``
(the vectors as ``vector``: the revision before halfvec), one to head (``halfvec``, migration
0062_halfvec), filled with the same rows (384-d vectors, two search tokens each, the partitions
of ``--partitions``). Then ``search_memories_v8`` (what every read runs) in vector and hybrid
mode, by blocks of ``--calls`` alternating between the two, ``--rounds`` times, each call
with a fresh random query vector: the medians side by side and halfvec/vector. The machine's
noise falls on both sides alike, unlike two servers (``bench/ab_l2.py``); the Python of the
read is the same on both sides, so this times the SQL and the rows alone. Also printed: the
average row size and the memory table with its indexes, a memory.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import numpy as np

from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.database import register_vector_codec
from amrita_memory_pg.storage.pg.embedded import start_embedded

NOW = datetime(2026, 12, 1, tzinfo=UTC)
SIDES = {"vector": "0061_partition_count", "halfvec": "heads"}
FILL = """
INSERT INTO amrita_memory.memory (partition_key, scope, content, importance, created_at,
       updated_at, tier_since, embedding, embed_fingerprint, search_tokens)
SELECT 'p_' || (g % $2), 'user', 'memory ' || g, 1 + g % 10, $1, $1, $1,
       (SELECT array_agg(sin(g * 7 + i)::real)::real[]::vector FROM generate_series(1, 384) i),
       'bench', array_to_tsvector(ARRAY['w' || (g % 20), 'r' || (g % 3000)])
  FROM generate_series(1, $3) g"""
SEARCH = """
SELECT id FROM amrita_memory.search_memories_v8(
       p_partition => $1, p_query => $2, p_tokens => $3, p_mode => $4, p_top_k => 5,
       p_now => $5, p_decay => true, p_base_days => 30, p_boost => 1, p_floor => 0.05)"""
SIZES = """
SELECT avg(pg_column_size(m.*))::int AS row_bytes,
       pg_total_relation_size('amrita_memory.memory') / count(*) AS bytes_a_memory
  FROM amrita_memory.memory m"""


async def run(args: argparse.Namespace, host_dsn: str) -> None:
    admin = await asyncpg.connect(host_dsn)
    conns: dict[str, asyncpg.Connection] = {}
    try:
        for side, revision in SIDES.items():
            await admin.execute(f"CREATE DATABASE ab_{side}")
            dsn = host_dsn.replace("/postgres?", f"/ab_{side}?")
            await migrate.upgrade(dsn, revision)
            conn = await asyncpg.connect(dsn)
            await conn.execute(FILL, NOW, args.partitions, args.rows)
            await conn.execute("VACUUM ANALYZE amrita_memory.memory")
            sizes = await conn.fetchrow(SIZES)
            assert sizes is not None
            print(
                f"{side}: rows of {sizes['row_bytes']:,} B, the memory table and its indexes "
                f"{sizes['bytes_a_memory']:,} B a memory",
                flush=True,
            )
            await register_vector_codec(conn)
            # as the product's pool does for every search statement
            await conn.execute("SET plan_cache_mode = force_generic_plan")
            conns[side] = conn
        rng = np.random.default_rng(1)
        for mode in ("vector", "hybrid"):
            times: dict[str, list[float]] = {side: [] for side in conns}
            for _ in range(args.rounds):
                for side, conn in conns.items():
                    for i in range(args.calls):
                        query = rng.standard_normal(384).astype(np.float32)
                        started = time.perf_counter()
                        await conn.fetch(
                            SEARCH, f"p_{i % args.partitions}", query, ["w1", "r7"], mode, NOW
                        )
                        times[side].append(time.perf_counter() - started)
            med = {side: statistics.median(t) * 1000 for side, t in times.items()}
            print(
                f"{mode} read p50: vector {med['vector']:.3f} ms, halfvec {med['halfvec']:.3f} ms,"
                f" halfvec/vector {med['halfvec'] / med['vector']:.2f}x",
                flush=True,
            )
    finally:
        for conn in conns.values():
            await conn.close()
        await admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300, help="reads per side per block")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ab_halfvec_"))
    server = start_embedded(work)
    try:
        asyncio.run(run(args, server.dsn("postgres")))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
