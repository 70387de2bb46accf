"""What the ``/metrics`` instrumentation costs on the hot paths: the same calls with the
recording on (as shipped) and off, interleaved in one run, and the ratio on/off.

Not a test. Opens a throwaway store (embedded PostgreSQL in a temporary directory, the
hashing embedder), fills one user's partition with ``--memories`` memories, then times,
in ``--rounds`` alternating rounds of ``--calls`` calls each:

- ``read_memory`` through ``Memory.call_tool`` (tool counter and histogram, the search
  histogram, the embedding counters on a query-cache miss, the pool's waiting count),
- ``MemoryService.search`` alone (the search histogram),
- ``Memory.memory_block`` (its histogram),
- ``write_memory`` through the tool (tool, write and embedding metrics),

and, without a database, one ``with metrics.timed(...)`` block and one
``record_tool_call`` in microseconds. "Off" replaces the recording functions of
:mod:`amrita_memory_pg.metrics` by no-ops and the pool's ``_acquire`` by asyncpg's own.

    .venv/bin/python bench/bench_metrics.py                     # 100 memories, 5 × 300 calls
    .venv/bin/python bench/bench_metrics.py --calls 1000 --rounds 7

Each side's figure is the median of its rounds' p50s; the ratio on/off (1.00 = no cost)
moves by a few percent between runs on a busy machine, so read it together with the
microsecond figures.
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
import timeit
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from amrita_memory_pg import metrics
from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.storage.pg.session import PinnablePool
from amrita_memory_pg.tools.context import ToolContext

WORDS = ["用户", "喜欢", "猫", "咖啡", "考试", "北京", "旅行", "周五", "发版", "数据库"]
WORDS += ["project", "postgres", "deploy", "tea", "likes", "exam", "trip", "cat"]
CTX = ToolContext(platform="qq", user_id="10001")


class _NoTimer:
    __slots__ = ()

    def __init__(self, *_: object) -> None:
        pass

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


def _nothing(*_: object, **__: object) -> None:
    return None


#: the recording functions the hot paths call, and what "off" puts in their place
SWITCHED: dict[str, Any] = {
    "timed": _NoTimer,
    "record_tool_call": _nothing,
    "observe_embedding": _nothing,
}


@contextmanager
def recording_off() -> Iterator[None]:
    saved = {name: getattr(metrics, name) for name in SWITCHED}
    acquire = PinnablePool.__dict__["_acquire"]
    for name, stub in SWITCHED.items():
        setattr(metrics, name, stub)
    PinnablePool._acquire = vars(asyncpg.Pool)["_acquire"]  # type: ignore[method-assign]
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(metrics, name, original)
        PinnablePool._acquire = acquire  # type: ignore[method-assign]


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))


async def p50(calls: int, call: Callable[[int], Awaitable[Any]], start: int) -> float:
    samples = []
    for i in range(start, start + calls):
        began = time.perf_counter()
        await call(i)
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def operations(mem: Memory) -> dict[str, Callable[[int], Awaitable[Any]]]:
    async def tool_read(i: int) -> None:
        # a new query text every 4th call: a query-cache miss calls the embedder
        query = f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]}"
        if i % 4 == 0:
            query += f" {i}"
        reply = json.loads(
            await mem.call_tool("read_memory", {"query": query, "scope": "user"}, CTX)
        )
        assert reply["status"] == "success", reply

    async def search(i: int) -> None:
        await mem.memories.search(CTX.personal_key, WORDS[i % len(WORDS)], top_k=5)

    async def block(i: int) -> None:
        await mem.memory_block(CTX)

    async def tool_write(i: int) -> None:
        args = {
            "content": f"第 {i} 条 {WORDS[i % len(WORDS)]}",
            "tags": "bench",
            "importance": "medium",
            "scope": "group",
        }
        group = ToolContext(platform="qq", user_id="10001", group_id=str(900 + i // 90))
        reply = json.loads(await mem.call_tool("write_memory", args, group))
        assert reply["status"] == "success", reply

    return {
        "read_memory via call_tool": tool_read,
        "MemoryService.search": search,
        "memory_block": block,
        "write_memory via call_tool": tool_write,
    }


def micro() -> list[tuple[str, float]]:
    """Microseconds per recording, no database."""
    number = 200_000

    def block() -> None:
        with metrics.timed(metrics.SEARCH_SECONDS, "hybrid"):
            pass

    def tool() -> None:
        metrics.record_tool_call("chat", "read_memory", "success", 0.001)

    def embed() -> None:
        metrics.observe_embedding("hash", "query", 1, True, 0.001)

    return [
        (label, min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6)
        for label, fn in (
            ("with metrics.timed(...) (search, write, memory block)", block),
            ("record_tool_call (every tool call)", tool),
            ("observe_embedding (every provider call)", embed),
        )
    ]


async def main(memories: int, calls: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as tmp:
        settings = load_settings(
            env={},
            read_default_files=False,
            overrides={
                "data_dir": str(Path(tmp)),
                "embedding.protocol": "hash",
                "per_session_memory_limit": 100_000,
                "write_dedup_seconds": 0,
            },
        )
        rng = random.Random(45)
        now = datetime.now(UTC)
        async with open_memory(settings, startup=False) as mem:
            for _ in range(memories):
                await mem.memories.add(
                    partition_key=CTX.personal_key,
                    scope="user",
                    content=text(rng),
                    importance=rng.randint(1, 10),
                    now=now - timedelta(days=rng.uniform(0, 33)),
                )
            ops = operations(mem)
            for call in ops.values():  # warm-up
                for i in range(20):
                    await call(10_000_000 + i)
            on: dict[str, list[float]] = {name: [] for name in ops}
            off: dict[str, list[float]] = {name: [] for name in ops}
            start = 0
            for r in range(rounds):
                # alternate which side goes first, so a trend in the machine's load
                # falls on both alike
                order = (True, False) if r % 2 == 0 else (False, True)
                for shipped in order:
                    for name, call in ops.items():
                        if shipped:
                            on[name].append(await p50(calls, call, start))
                        else:
                            with recording_off():
                                off[name].append(await p50(calls, call, start))
                        start += calls
    print(f"{memories} memories, {rounds} rounds × {calls} calls per side, interleaved")
    print("| path | on (p50) | off (p50) | on/off |")
    print("|---|---|---|---|")
    for name in on:
        a, b = statistics.median(on[name]), statistics.median(off[name])
        print(f"| {name} | {a * 1000:.3f} ms | {b * 1000:.3f} ms | {a / b:.3f} |")
    print()
    print("| one recording | µs |")
    print("|---|---|")
    for label, micros in micro():
        print(f"| {label} | {micros:.2f} |")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nmachine load average: {load} on {os.cpu_count()} cores")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.calls, args.rounds))
