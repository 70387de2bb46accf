"""A search on a read replica against the same search on the primary. Not a test.

Starts a throwaway embedded server and a streaming standby of it (``pg_basebackup -R``,
tests/support/replica.py), fills one partition with ``--memories`` memories, and times
the chat tool's ``read_memory`` (hybrid, top 5), A and B interleaved round by round:

* A, primary only: ONE statement (``recall_memories_v2``: pause check, search, access log);
* B, ``read_url`` at the standby: ONE read-only statement there (``search_unpaused``),
  the access log queued and written to the primary behind the read.

Then the queued log is flushed: every recall of B written to the primary, none dropped.
Both servers share the machine, so B measures the routing's cost, not a replica's relief.

    .venv/bin/python bench/bench_replica.py                 # 500 memories, 300 rounds
    .venv/bin/python bench/bench_replica.py --memories 2000 --rounds 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.embedded import start_embedded
from amrita_memory_pg.tools.context import ToolContext
from tests.support.replica import run_replica

WORDS = ["用户", "偏好", "简洁", "回复", "部署", "测试", "数据库", "周五", "cat", "tea", "deploy"]


def stats(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))] * 1000
    return f"p50 {statistics.median(ordered) * 1000:7.3f} ms   p90 {p90:7.3f} ms"


async def caught_up(primary: asyncpg.Connection, standby: asyncpg.Connection) -> None:
    target = await primary.fetchval("SELECT pg_current_wal_lsn()")
    for _ in range(1200):
        replayed = await standby.fetchval("SELECT pg_last_wal_replay_lsn()")
        if replayed is not None and await standby.fetchval(
            "SELECT $1::pg_lsn >= $2::pg_lsn", replayed, target
        ):
            return
        await asyncio.sleep(0.05)
    raise SystemExit("the standby did not catch up")


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="amrita-replica-bench-"))
    tmp.chmod(0o755)
    server = start_embedded(tmp / "server")
    try:
        admin = await asyncpg.connect(server.dsn("postgres"))
        await admin.execute("CREATE DATABASE bench")
        await admin.close()
        dsn = server.dsn("bench")
        await migrate.upgrade(dsn)
        with run_replica(server.dsn("postgres"), tmp / "standby") as replica:

            def settings(read_url: str = "") -> Settings:
                return load_settings(
                    env={},
                    read_default_files=False,
                    overrides={
                        "database.url": dsn,
                        "database.read_url": read_url,
                        "data_dir": str(tmp / "data"),
                        "embedding.protocol": "hash",
                        "retrieval.default_mode": "hybrid",
                        "per_session_memory_limit": 100000,
                    },
                )

            rng = random.Random(7)
            ctx = ToolContext(platform="qq", user_id="10001", roles=frozenset())
            key = ctx.session_key
            async with (
                open_memory(settings(), startup=False) as a,
                open_memory(settings(replica.dsn("bench")), startup=False) as b,
            ):
                for _ in range(args.memories):
                    content = "".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
                    await a.memories.add(partition_key=key, scope="user", content=content)
                primary = await asyncpg.connect(dsn)
                standby = await asyncpg.connect(replica.dsn("bench"))
                await caught_up(primary, standby)
                times: dict[str, list[float]] = {"A": [], "B": []}
                for n in range(args.rounds):
                    query = " ".join(rng.sample(WORDS, 2))
                    order = [("A", a), ("B", b)] if n % 2 else [("B", b), ("A", a)]
                    for name, mem in order:
                        started = time.perf_counter()
                        reply = json.loads(
                            await mem.call_tool(
                                "read_memory", {"scope": "user", "query": query}, ctx
                            )
                        )
                        times[name].append(time.perf_counter() - started)
                        assert reply["status"] == "success", reply
                queued = b.trail.behind.pending
                flushed = time.perf_counter()
                await b.trail.flush()
                flushed = time.perf_counter() - flushed
                await primary.close()
                await standby.close()
                behind = b.trail.behind
                print(f"{args.memories} memories in one partition, {args.rounds} rounds")
                print(f"A primary, one statement        {stats(times['A'])}")
                print(f"B replica + access log behind   {stats(times['B'])}")
                print(
                    f"B's access log: {behind.written} of {args.rounds} recalls written to the "
                    f"primary behind the reads, {behind.dropped} dropped, {behind.failed} failed; "
                    f"{queued} still queued after the last read (flush took "
                    f"{flushed * 1000:.1f} ms)"
                )
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=300)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
