"""read_memory through the chat tool: p50 per call and round trips per call.

Not a test. Opens a throwaway store (embedded PostgreSQL in a temporary directory, the
hashing embedder), fills one user's partition with ``--memories`` memories (random
importance 1–10, ages 0–33 days, short mixed Chinese/English texts), then times
``Memory.call_tool("read_memory", …)`` — argument parsing, the query's embedding (from the
embedder's query cache: the texts repeat, so every timed call is a cache hit), the ONE
statement ``recall_memories`` (pause check, search, access log), the Python post-ranking
and the JSON reply — in the default mode (hybrid) and in vector and keyword mode.

Round trips are counted at the driver: every statement asyncpg sends through a pooled
connection during the timed calls (prepared or simple, a reset on release included),
divided by the calls, and the time spent inside those statements per call ("DB share",
its p50). The floor is ``SELECT 1`` on the same pool.

    .venv/bin/python bench/bench_tool_read.py                 # 100 memories, 500 calls
    .venv/bin/python bench/bench_tool_read.py --memories 100 --calls 1000

Target (docs/performance.md): DB share one round trip, the tool call ≤ 1.5 ms p50.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.tools.context import ToolContext

WORDS = ["用户", "喜欢", "猫", "咖啡", "考试", "北京", "旅行", "周五", "发版", "数据库"]
WORDS += ["project", "postgres", "deploy", "tea", "likes", "exam", "trip", "cat"]
QUERIES = ["猫 咖啡", "考试 周五", "北京 旅行", "postgres deploy", "喜欢 tea", "数据库 发版"]


class RoundTrips:
    """Counts the statements asyncpg sends (one network round trip each): the extended
    protocol's bind+execute (``_execute``, ``_executemany``) and simple queries
    (``execute`` without arguments: BEGIN, COMMIT, a reset on release)."""

    def __init__(self) -> None:
        self.count = 0
        self.busy = 0.0  # seconds inside statements since the last take()
        cls: Any = asyncpg.connection.Connection
        self._saved = {name: getattr(cls, name) for name in ("_execute", "_executemany", "execute")}
        counter = self

        async def _execute(self: Any, *args: Any, **kwargs: Any) -> Any:
            counter.count += 1
            started = time.perf_counter()
            try:
                return await counter._saved["_execute"](self, *args, **kwargs)
            finally:
                counter.busy += time.perf_counter() - started

        async def _executemany(self: Any, *args: Any, **kwargs: Any) -> Any:
            counter.count += 1
            started = time.perf_counter()
            try:
                return await counter._saved["_executemany"](self, *args, **kwargs)
            finally:
                counter.busy += time.perf_counter() - started

        async def execute(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
            if args:  # with arguments it goes through _execute (counted there)
                return await counter._saved["execute"](self, query, *args, **kwargs)
            counter.count += 1
            started = time.perf_counter()
            try:
                return await counter._saved["execute"](self, query, *args, **kwargs)
            finally:
                counter.busy += time.perf_counter() - started

        cls._execute, cls._executemany, cls.execute = _execute, _executemany, execute

    def take(self) -> float:
        """Seconds spent inside statements since the last call."""
        busy, self.busy = self.busy, 0.0
        return busy

    def close(self) -> None:
        for name, method in self._saved.items():
            setattr(asyncpg.connection.Connection, name, method)


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1000:.3f} ms   p95 {p95 * 1000:.3f} ms"


async def timed(
    calls: int, call: Callable[[int], Awaitable[Any]], db: RoundTrips | None = None
) -> tuple[list[float], list[float]]:
    """(wall time of each call, time inside statements of each call when counted)."""
    out, inside = [], []
    for i in range(calls):
        if db is not None:
            db.take()
        started = time.perf_counter()
        await call(i)
        out.append(time.perf_counter() - started)
        if db is not None:
            inside.append(db.take())
    return out, inside


async def main(memories: int, calls: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-tool-read-") as tmp:
        settings = load_settings(
            env={},
            read_default_files=False,
            overrides={"data_dir": str(Path(tmp)), "embedding.protocol": "hash"},
        )
        ctx = ToolContext(platform="qq", user_id="10001")
        rng = random.Random(24)
        now = datetime.now(UTC)
        async with open_memory(settings, startup=False) as mem:
            for _ in range(memories):
                await mem.memories.add(
                    partition_key=ctx.personal_key,
                    scope="user",
                    content=text(rng),
                    importance=rng.randint(1, 10),
                    source="user",
                    now=now - timedelta(days=rng.uniform(0, 33)),
                )
            print(
                f"{memories} memories in {ctx.personal_key}, {calls} calls per row, "
                f"default mode {settings.retrieval.default_mode}",
                flush=True,
            )
            rows: list[tuple[str, list[float], list[float], float]] = []
            for mode in (None, "vector", "hybrid", "keyword"):

                def read(i: int, mode: str | None = mode) -> Awaitable[str]:
                    args: dict[str, Any] = {
                        "query": QUERIES[i % len(QUERIES)],
                        "scope": "user",
                        "top_k": 5,
                    }
                    if mode:
                        args["mode"] = mode
                    return mem.call_tool("read_memory", args, ctx)

                for i in range(30):  # warm-up: connections, prepared statements, query cache
                    reply = json.loads(await read(i))
                    assert reply["status"] == "success", reply
                counter = RoundTrips()
                try:
                    samples, inside = await timed(calls, read, counter)
                finally:
                    counter.close()
                label = mode or f"default ({settings.retrieval.default_mode})"
                rows.append((label, samples, inside, counter.count / calls))
            floor, _ = await timed(calls, lambda i: mem.pool.fetchval("SELECT 1"))
        for label, samples, inside, trips in rows:
            print(
                f"read_memory via call_tool, {label:16s} {summary(samples)}   "
                f"{trips:.2f} round trips/call, DB share p50 {statistics.median(inside) * 1000:.3f} ms"
            )
        print(f"floor: SELECT 1 round trip                  {summary(floor)}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine load average: {load} on {os.cpu_count()} cores")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.calls))
