"""Knowledge-base benchmark: the exact-scan search and the line-window read as the entry
count grows. Not a test: it prints a table.

Goes through the product's own service and named queries (``knowledge_create_v2``,
``knowledge_search_v2`` in each mode, ``knowledge_read_v1``, ``knowledge_list_v1``) on a throwaway
embedded server, with the in-process hashing embedder (no model runs; embedding time is
part of the create and search columns, and tiny). Times are client wall times of one
call, median of ``--repeat`` calls, round trips included.

    .venv/bin/python bench/bench_knowledge.py                  # 100, 1000, 5000 entries, 384-d
    .venv/bin/python bench/bench_knowledge.py --sizes 200 2000 --dim 1024
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.records import SEARCH_MODES, SearchMode
from amrita_memory_pg.settings import load_settings


async def _median_ms(repeat: int, call: Callable[[int], Awaitable[Any]]) -> float:
    samples = []
    for i in range(repeat):
        started = time.perf_counter()
        await call(i)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def run(sizes: list[int], dim: int, repeat: int, body_lines: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-knowledge-") as tmp:
        settings = load_settings(
            env={},
            read_default_files=False,
            overrides={
                "data_dir": str(Path(tmp)),
                "embedding.protocol": "hash",
                "embedding.hash_dim": dim,
                "subconscious.knowledge_max_chars": 100000,
            },
        )
        async with open_memory(settings, startup=False) as mem:
            kb = mem.knowledge
            body = "\n".join(f"第 {n} 行：一些说明文字 some words" for n in range(body_lines))
            kids: list[str] = []
            print(
                f"# knowledge: {dim}-d hash embedder, body {body_lines} lines / {len(body)} chars, "
                f"median of {repeat}"
            )
            print(
                "entries | create ms | search top5 ms vector / keyword / hybrid "
                "| read 20 lines ms | list ms"
            )
            for size in sorted(sizes):
                create_ms: list[float] = []
                while len(kids) < size:
                    n = len(kids)
                    started = time.perf_counter()
                    written = await kb.create(
                        title=f"条目 {n}", summary=f"关于主题 {n} 的摘要 topic {n % 97}", body=body
                    )
                    create_ms.append((time.perf_counter() - started) * 1000)
                    kids.append(written.kid)
                search: list[float] = []
                for mode in SEARCH_MODES:

                    async def ask(i: int, m: SearchMode = mode) -> Any:
                        return await kb.search(f"主题 {i * 7} 摘要", 5, mode=m)

                    search.append(await _median_ms(repeat, ask))
                read = await _median_ms(repeat, lambda i: kb.read(kids[i % len(kids)], 10, 30))
                listing = await _median_ms(max(3, repeat // 10), lambda i: kb.entries())
                create = statistics.median(create_ms) if create_ms else float("nan")
                modes = " / ".join(f"{ms:.2f}" for ms in search)
                print(f"{size:>7} | {create:9.2f} | {modes:>24} | {read:16.2f} | {listing:7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--body-lines", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(run(args.sizes, args.dim, args.repeat, args.body_lines))


if __name__ == "__main__":
    main()
