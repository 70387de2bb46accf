"""End-to-end read_memory latency with a CPU-busy neighbour process (issue 16).

    .venv/bin/python bench/bench_embed_stall.py                 # both wait policies
    .venv/bin/python bench/bench_embed_stall.py --reads 300 --threads 0

For each OpenMP wait policy (ACTIVE = libgomp's default before the fix, PASSIVE = what
``embedding/local.py`` sets now) a child process opens a fresh embedded store with the
offline default model (``local``, ``local_threads`` as given: 0 = every core), writes
100 memories, starts a neighbour process that keeps one core busy, and times
``read_memory`` calls through the chat tool, query embedding included (every query
distinct, so the query cache never answers). Prints p50/p95/max per policy; the target
is p95 ≤ 2 × p50.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ZH_EN = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "zh_en_retrieval.json"


def busy() -> None:
    """The neighbour: one core at 100 % until killed."""
    x = 0
    while True:
        x = (x * 31 + 7) % 1_000_003


async def child(reads: int, threads: int) -> dict[str, float]:
    from amrita_memory_pg.bootstrap import open_memory
    from amrita_memory_pg.settings import load_settings
    from amrita_memory_pg.tools.context import ToolContext

    data = json.loads(ZH_EN.read_text(encoding="utf-8"))
    facts = [f["text"] for f in data["facts"]]
    questions = [q["q"] for q in data["queries"]]
    workdir = Path(tempfile.mkdtemp(prefix="stall-"))
    settings = load_settings(
        env={},
        read_default_files=False,
        overrides={
            "data_dir": str(workdir),
            "embedding.protocol": "local",
            "embedding.local_threads": threads,
            "per_session_memory_limit": 1000,
        },
    )
    ctx = ToolContext(platform="qq", user_id="stall")
    neighbour = None
    try:
        async with open_memory(settings, startup=False) as mem:
            await mem.embedder.prepare()
            for i in range(100):
                await mem.memories.add(
                    partition_key=ctx.personal_key,
                    scope="user",
                    content=f"{facts[i % len(facts)]}（{i}）",
                    now=datetime.now(UTC),
                )
            neighbour = subprocess.Popen([sys.executable, __file__, "--busy"])  # noqa: ASYNC220
            await asyncio.sleep(1.0)
            times = []
            for i in range(reads):
                text = f"{questions[i % len(questions)]} {i}"  # distinct: no query-cache hit
                started = time.perf_counter()
                reply = json.loads(
                    await mem.call_tool("read_memory", {"query": text, "scope": "user"}, ctx)
                )
                times.append((time.perf_counter() - started) * 1000)
                assert reply["status"] == "success", reply
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    times.sort()
    return {
        "p50": statistics.median(times),
        "p95": times[int(len(times) * 0.95) - 1],
        "max": times[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--threads", type=int, default=0, help="local_threads (0 = every core)")
    parser.add_argument("--policies", default="ACTIVE,PASSIVE")
    parser.add_argument("--busy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.busy:
        busy()
        return
    if args.child:
        print(json.dumps(asyncio.run(child(args.reads, args.threads))))
        return
    print(f"read_memory end to end, local model, local_threads={args.threads}, one busy neighbour")
    print("| OMP_WAIT_POLICY | p50 ms | p95 ms | max ms | p95/p50 |")
    print("|---|---|---|---|---|")
    for policy in [p for p in args.policies.split(",") if p]:
        env = dict(os.environ, OMP_WAIT_POLICY=policy)
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--reads",
                str(args.reads),
                "--threads",
                str(args.threads),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"| {policy} | {r['p50']:.1f} | {r['p95']:.1f} | {r['max']:.1f} | {r['p95'] / r['p50']:.2f} |"
        )


if __name__ == "__main__":
    main()
