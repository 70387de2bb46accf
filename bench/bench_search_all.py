"""The admin page's search across partitions: what one search costs
with many partitions. Not a test.

Opens a throwaway store (embedded PostgreSQL in a temporary directory, the hashing
embedder), fills ``--partitions`` user partitions with ``--per`` memories each, and times
the page's ``search_all`` (the per-partition search on the largest 200 partitions, best 10
of each, merged) in each mode, ``--rounds`` times.

    .venv/bin/python bench/bench_search_all.py                       # 200 × 20, 20 rounds
    .venv/bin/python bench/bench_search_all.py --partitions 500 --per 50
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.storage.admin import AdminRepository
from amrita_memory_pg.web.pages.search import MAX_PARTITIONS, search_all

WORDS = ["用户", "偏好", "简洁", "回复", "部署", "测试", "数据库", "周五", "cat", "tea", "deploy"]


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))


async def main(partitions: int, per: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-search-all-") as tmp:
        settings = load_settings(
            env={},
            read_default_files=False,
            overrides={"data_dir": str(Path(tmp)), "embedding.protocol": "hash"},
        )
        rng = random.Random(26)
        async with open_memory(settings, startup=False) as mem:
            for p in range(partitions):
                for _ in range(per):
                    await mem.memories.add(
                        partition_key=f"QQPlatform_Private_{100000 + p}",
                        scope="user",
                        content=text(rng),
                        importance=rng.randint(1, 10),
                    )
            admin = AdminRepository(mem.pool, mem.store.read_pool)
            print(
                f"{partitions} partitions × {per} memories; searched: the largest "
                f"{min(partitions, MAX_PARTITIONS)}"
            )
            for mode in ("keyword", "vector", "hybrid"):
                samples = []
                for _ in range(rounds):
                    started = time.perf_counter()
                    hits, searched, _total = await search_all(
                        mem, admin, "用户 偏好 部署", mode, None, datetime.now(UTC)
                    )
                    samples.append(time.perf_counter() - started)
                ordered = sorted(samples)
                p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
                print(
                    f"{mode:8} p50 {statistics.median(ordered) * 1000:8.1f} ms   "
                    f"p90 {p90 * 1000:8.1f} ms   hits {len(hits)} of {searched} partitions"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--per", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.partitions, args.per, args.rounds))
