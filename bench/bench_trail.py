"""The memory's trail: what the access log, the pause check and the change
history cost the read and write paths. Not a test.

Opens a throwaway store (embedded PostgreSQL in a temporary directory, the hashing
embedder), fills one user's partition and the global one with ``--memories`` memories,
and times, A and B interleaved turn by turn so that machine noise hits both alike:

* ``read_memory`` search (hybrid, top 5): without the trail (``recall`` not given) vs
  with it (ONE more statement: recall_v1 = pause check + access log + trim);
* the per-turn block (``memory_block``, injection on): without the trail vs with it
  (one query for the paused partitions among its keys, the injected ones logged in the
  background), and without vs the pause check alone (injection log off);
* an update of one memory's importance: history trigger disabled vs enabled (the
  trigger's insert + per-memory trim; the actor's set_config round trip included).

    .venv/bin/python bench/bench_trail.py                  # 200 memories, 300 rounds
    .venv/bin/python bench/bench_trail.py --memories 1000 --rounds 500
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.keys import GLOBAL_KEY
from amrita_memory_pg.domain.trail import Actor, Recall, acting
from amrita_memory_pg.services.trail import TrailService
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.tools.context import ToolContext

WORDS = ["用户", "偏好", "简洁", "回复", "部署", "测试", "数据库", "周五", "cat", "tea", "deploy"]


def text(rng: random.Random) -> str:
    out = ""
    target = rng.randint(10, 60)
    while len(out) < target:
        out += rng.choice(WORDS) + ("" if rng.random() < 0.5 else " ")
    return out.strip()


def stats(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))] * 1000
    return f"p50 {statistics.median(ordered) * 1000:7.3f} ms   p90 {p90:7.3f} ms"


async def pair(
    rounds: int, a: Callable[[], Awaitable[object]], b: Callable[[], Awaitable[object]]
) -> tuple[list[float], list[float]]:
    """Time ``a`` and ``b`` alternately (their order flipped every round)."""
    ta: list[float] = []
    tb: list[float] = []
    for i in range(rounds):
        for fn, out in ((a, ta), (b, tb)) if i % 2 else ((b, tb), (a, ta)):
            started = time.perf_counter()
            await fn()
            out.append(time.perf_counter() - started)
    return ta, tb


async def main(memories: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-trail-") as tmp:
        settings = load_settings(
            env={},
            read_default_files=False,
            overrides={
                "data_dir": str(Path(tmp)),
                "embedding.protocol": "hash",
                "per_session_memory_limit": memories,
                "injection.enabled": True,
            },
        )
        ctx = ToolContext(platform="qq", user_id="10001")
        rng = random.Random(17)
        now = datetime.now(UTC)
        async with open_memory(settings, startup=False) as mem:
            ids: list[str] = []
            for n in range(memories):
                key, scope = (GLOBAL_KEY, "global") if n % 2 else (ctx.personal_key, "user")
                record = await mem.memories.add(
                    partition_key=key,
                    scope=scope,  # type: ignore[arg-type]
                    content=text(rng),
                    importance=rng.randint(1, 10),
                    now=now - timedelta(days=rng.uniform(0, 365)),
                )
                if key == ctx.personal_key:
                    ids.append(record.id)
            service = mem.memories
            trail = mem.trail
            recall = Recall("tool", ctx.session_key, ctx.user_id)

            async def search_plain() -> object:
                return await service.search(ctx.personal_key, "用户 偏好 部署", top_k=5)

            async def search_logged() -> object:
                return await service.search(
                    ctx.personal_key, "用户 偏好 部署", top_k=5, recall=recall
                )

            async def block_plain() -> object:
                mem.bot_memories.trail = None
                try:
                    return await mem.memory_block(ctx)
                finally:
                    mem.bot_memories.trail = trail

            async def block_logged() -> object:
                return await mem.memory_block(ctx)

            pause_only = TrailService(
                trail.repo, settings.trail.model_copy(update={"log_injection": False})
            )

            async def block_pause_only() -> object:
                mem.bot_memories.trail = pause_only
                try:
                    return await mem.memory_block(ctx)
                finally:
                    mem.bot_memories.trail = trail

            for _ in range(20):  # warm-up: connections, prepared statements, the tokenizer
                await search_logged()
                await block_logged()
            s_plain, s_logged = await pair(rounds, search_plain, search_logged)
            b_plain, b_logged = await pair(rounds, block_plain, block_logged)
            b_plain2, b_pause = await pair(rounds, block_plain, block_pause_only)

            target = ids[0]
            level = [1]

            async def update() -> object:
                level[0] = level[0] % 9 + 1
                with acting(Actor("person", "bench")):
                    return await service.update(ctx.personal_key, target, importance=level[0])

            async def update_untracked() -> object:
                await mem.pool.execute(
                    "ALTER TABLE amrita_memory.memory DISABLE TRIGGER trail_memory_update"
                )
                try:
                    started = time.perf_counter()
                    await update()
                    return time.perf_counter() - started
                finally:
                    await mem.pool.execute(
                        "ALTER TABLE amrita_memory.memory ENABLE TRIGGER trail_memory_update"
                    )

            w_plain: list[float] = []
            w_logged: list[float] = []
            for _ in range(rounds):
                elapsed = await update_untracked()
                assert isinstance(elapsed, float)
                w_plain.append(elapsed)
                started = time.perf_counter()
                await update()
                w_logged.append(time.perf_counter() - started)
            logged = await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory_access")
            history = await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory_change")
    print(f"{memories} memories, {rounds} rounds each (A/B interleaved)")
    print(f"read_memory search   without trail: {stats(s_plain)}")
    print(f"read_memory search   with trail:    {stats(s_logged)}")
    print(f"memory_block turn    without trail: {stats(b_plain)}")
    print(f"memory_block turn    with trail:    {stats(b_logged)}")
    print(f"memory_block turn    without trail: {stats(b_plain2)}  (second pair)")
    print(f"memory_block turn    pause only:    {stats(b_pause)}  (no injection log)")
    print(f"update importance    no history:    {stats(w_plain)}")
    print(f"update importance    with history:  {stats(w_logged)}")
    print(f"rows kept: memory_access {logged}, memory_change {history} (bounded per memory)")
    print(
        f"machine load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.rounds))
