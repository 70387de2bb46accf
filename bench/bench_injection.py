"""The "## Bot Memories" block: p50 per turn with 200 candidate memories.

Not a test. Opens a throwaway store (embedded PostgreSQL in a temporary directory, the
hashing embedder), fills the global partition and one user's partition with 200
memories together (random importance 1–10, ages 0–365 days, 10–80 characters of mixed
Chinese and English), turns ``[injection]`` on with the default budget (800 cl100k
tokens) and times:

* ``memory_block`` — the whole turn: the ONE SQL query (memos, loaded scopes, the 200
  candidates — sent only when their version changed since the chat's last turn), the
  budget selection with the real tokenizer, the rendering; and the same turn when the
  candidates changed every turn (all 200 sent and decoded);
* ``select`` — the pure selection + token counting alone, on the same 200 candidates.

    .venv/bin/python bench/bench_injection.py                 # 200 candidates, 500 turns
    .venv/bin/python bench/bench_injection.py --candidates 1000 --budget 2000

Target: p50 ≤ 2 ms for 200 candidates (a turn's own budget before the model call).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.injection import scope_labels_for, select
from amrita_memory_pg.domain.keys import GLOBAL_KEY
from amrita_memory_pg.domain.records import CATEGORIES, CATEGORY_NAMES
from amrita_memory_pg.llm.tokens import token_counter, tokenizer_name
from amrita_memory_pg.services.bot_memories import remembered
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.tools.context import ToolContext

WORDS = [
    "用户",
    "偏好",
    "简洁",
    "回复",
    "部署",
    "测试",
    "数据库",
    "迁移",
    "周五",
    "发版",
    "project",
    "postgres",
    "deploy",
    "cat",
    "likes",
    "tea",
]


def text(rng: random.Random) -> str:
    out = ""
    target = rng.randint(10, 80)
    while len(out) < target:
        out += rng.choice(WORDS) + ("" if rng.random() < 0.5 else " ")
    return out.strip()


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def p(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return f"p50 {statistics.median(ordered) * 1000:.3f} ms   p90 {p(0.9):.3f} ms   p99 {p(0.99):.3f} ms"


async def main(candidates: int, budget: int, turns: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-injection-") as tmp:
        settings = load_settings(
            env={},
            read_default_files=False,
            overrides={
                "data_dir": str(Path(tmp)),
                "embedding.protocol": "hash",
                "per_session_memory_limit": candidates,
                "injection.enabled": True,
                "injection.inject_token_budget": budget,
                "injection.max_candidates": candidates,
            },
        )
        ctx = ToolContext(platform="qq", user_id="10001")
        rng = random.Random(14)
        now = datetime.now(UTC)
        async with open_memory(settings, startup=False) as mem:
            for n in range(candidates):
                key, scope = (GLOBAL_KEY, "global") if n % 2 else (ctx.personal_key, "user")
                await mem.memories.add(
                    partition_key=key,
                    scope=scope,  # type: ignore[arg-type]
                    content=text(rng),
                    importance=rng.randint(1, 10),
                    category=rng.choice([*CATEGORIES, None]),
                    source="user",
                    now=now - timedelta(days=rng.uniform(0, 365)),
                )
            await mem.memos.replace(ctx.personal_key, "Alice 是学生，喜欢简洁的回答")
            for _ in range(20):  # warm-up: connections, prepared statements, the tokenizer
                block = await mem.memory_block(ctx)
            whole: list[float] = []
            for _ in range(turns):
                started = time.perf_counter()
                await mem.memory_block(ctx)
                whole.append(time.perf_counter() - started)

            # the same turn when the candidates changed since the last one (all sent again)
            changed: list[float] = []
            for _ in range(turns):
                mem.bot_memories.forget_candidates()
                started = time.perf_counter()
                await mem.memory_block(ctx)
                changed.append(time.perf_counter() - started)

            # floors on the same pool: one round trip, and a plain read of as many rows
            floor_rt: list[float] = []
            floor_rows: list[float] = []
            for _ in range(turns):
                started = time.perf_counter()
                await mem.pool.fetchval("SELECT 1")
                floor_rt.append(time.perf_counter() - started)
                started = time.perf_counter()
                await mem.memories.list_page(ctx.personal_key, limit=candidates)
                floor_rows.append(time.perf_counter() - started)

            rows = await mem.bot_memories.repo.block(
                memo_keys=[ctx.personal_key],
                chat_key=ctx.session_key,
                scope_keys=[GLOBAL_KEY, ctx.session_key],
                limit=candidates,
            )
        count = remembered(token_counter())  # as BotMemories counts: recent lines remembered
        labels = scope_labels_for(group_key=None, personal_key=ctx.personal_key, loaded=[])
        pure: list[float] = []
        for _ in range(turns):
            started = time.perf_counter()
            chosen = select(
                rows.memories,
                budget=budget,
                count=count,
                now=now,
                half_life_days=30.0,
                scope_labels=labels,
                category_names=CATEGORY_NAMES,
            )
            pure.append(time.perf_counter() - started)
    print(
        f"candidates {len(rows.memories)}, budget {budget} tokens ({tokenizer_name()}), {turns} turns"
    )
    print(f"kept {len(chosen.lines)} lines = {chosen.tokens} tokens, evicted {chosen.evicted}")
    print(f"memory_block (1 SQL query + select + render): {percentiles(whole)}")
    print(f"  the same, candidates changed every turn:    {percentiles(changed)}")
    print(f"select alone (token counting + eviction):      {percentiles(pure)}")
    print(f"floor: SELECT 1 round trip:                    {percentiles(floor_rt)}")
    print(f"floor: list_page of {candidates // 2} rows (one partition):  {percentiles(floor_rows)}")
    print(
        f"machine load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
    )
    print(f"block: {len(block)} characters, first lines:")
    for line in block.splitlines()[:6]:
        print("   ", line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--budget", type=int, default=800)
    parser.add_argument("--turns", type=int, default=500)
    args = parser.parse_args()
    asyncio.run(main(args.candidates, args.budget, args.turns))
