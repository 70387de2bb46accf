"""Profile benchmark: edit latency, contended edits on one profile, memory_block cost.

Not a test: it opens a throwaway store (embedded PostgreSQL in a temporary directory,
unless ``--dsn``) and prints client-side wall times, round trips included.

    .venv/bin/python bench/bench_profiles.py
    .venv/bin/python bench/bench_profiles.py --edits 500 --writers 32
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.profile import ProfileActor, make_edit
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.tools.context import ToolContext

ACTOR = ProfileActor("cli", "bench")


async def timed(n: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        await call(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def row(label: str, samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=20) if len(samples) > 1 else samples * 19
    return f"| {label} | {len(samples)} | {statistics.median(samples):.2f} | {q[18]:.2f} |"


async def run(mem: Memory, edits: int, writers: int) -> None:
    key = "QQPlatform_Private_1"
    caps = {"summary_max_chars": 1000, "line_max_chars": 500, "max_lines": 5000}
    mem.profiles.limits = mem.profiles.settings.model_copy(update=caps)
    appends = await timed(
        edits, lambda i: mem.profiles.edit(key, make_edit("S", f"line {i}", None, None), ACTOR)
    )
    replaces = await timed(
        edits,
        lambda i: mem.profiles.edit(key, make_edit("S", f"x{i}", i % 50, i % 50 + 1), ACTOR),
    )
    reads = await timed(edits, lambda i: mem.profiles.read(key, 0, 20))
    ctx = ToolContext(platform="qq", user_id="1")
    await mem.memos.replace(key, "备忘")
    block_off = await timed(edits, lambda i: mem.memory_block(ctx))
    injecting = mem.settings.model_copy(
        update={"profile": mem.settings.profile.model_copy(update={"inject_summary": True})}
    )
    with_summary = Memory(dataclasses.replace(mem.store, settings=injecting))
    block_on = await timed(edits, lambda i: with_summary.memory_block(ctx))

    other = "QQPlatform_Private_2"
    per_writer = max(1, edits // writers)

    async def writer(w: int) -> None:
        for i in range(per_writer):
            await mem.profiles.edit(other, make_edit("S", f"w{w}-{i}", None, None), ACTOR)

    start = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(writers)))
    wall = time.perf_counter() - start
    stored = await mem.profiles.get(other)
    expected = writers * per_writer
    print("| operation | calls | median ms | p95 ms |")
    print("|---|---|---|---|")
    print(row("edit: append (lock, read, save)", appends))
    print(row("edit: replace one line", replaces))
    print(row("read window of 20 lines", reads))
    print(row("memory_block, summary off", block_off))
    print(row("memory_block, summary on", block_on))
    print(
        f"\n{writers} concurrent writers x {per_writer} appends on one profile: "
        f"{expected / wall:.0f} edits/s, {stored.total_lines}/{expected} lines kept, "
        f"version {stored.version}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--dsn", default="", help="an existing database (default: embedded)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        overrides: dict[str, Any] = {
            "data_dir": str(Path(tmp) / "data"),
            "embedding.protocol": "hash",
        }
        if args.dsn:
            overrides["database.url"] = args.dsn
        settings = load_settings(env={}, read_default_files=False, overrides=overrides)
        async with open_memory(settings, startup=False) as mem:
            await run(mem, args.edits, args.writers)


if __name__ == "__main__":
    asyncio.run(main())
