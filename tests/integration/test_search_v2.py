"""search_memories_v2 returns exactly what v1 returns (same rows, bit-identical scores)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from amrita_memory_pg.maintenance.ann import maintain_ann_indexes
from amrita_memory_pg.memory import Memory
from tests.support.data import random_memories

NOW = datetime(2026, 6, 1, tzinfo=UTC)
SMALL = "QQPlatform_Private_1"
BIG = "QQPlatform_Group_9"
ARGS = "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 200"


async def _fill(mem: Memory, partition: str, n: int, rng: random.Random) -> None:
    await random_memories(mem, partition, n, rng, NOW)


async def _search(mem: Memory, version: int, *args: Any) -> list[tuple[Any, ...]]:
    rows = await mem.pool.fetch(
        f"SELECT id, distance, decay_score, age_days FROM amrita_memory.search_memories_v{version}({ARGS})",
        *args,
    )
    return [tuple(r) for r in rows]


@pytest.mark.usefixtures("retired_sql")
async def test_v2_equals_v1_on_small_and_ann_partitions(memory: Memory) -> None:
    rng = random.Random(3)
    await _fill(memory, SMALL, 120, rng)
    await _fill(memory, BIG, 320, rng)
    report = await maintain_ann_indexes(memory.pool, min_rows=300)
    assert len(report.built) == 1  # BIG takes the HNSW path, SMALL the exact one
    dim = len(await memory.embedder.embed_query("x"))
    filters: list[tuple[Any, ...]] = [
        (None, None, None, None),
        (4, 7, None, None),
        (None, None, "group", None),
        (None, None, None, ["猫", "茶"]),
        (8, 10, "user", ["狗"]),
    ]
    compared = 0
    for partition in (SMALL, BIG):
        for decay in (True, False):
            for flt in filters:
                query = np.random.default_rng(compared).standard_normal(dim).astype(np.float32)
                args = (partition, query, 7, NOW, decay, 30.0, 1.0, 0.05, *flt)
                v1 = await _search(memory, 1, *args)
                v2 = await _search(memory, 2, *args)
                assert v2 == v1  # same ids, same order, bit-identical floats
                compared += bool(v1)
    assert compared >= 15


SIGNATURE = (
    "(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, "
    "text, text[], integer)"
)


SIGNATURE_V4 = (
    "(text, vector, text[], text, integer, timestamptz, boolean, float8, float8, float8, "
    "integer, integer, text, text[], text, integer, text, float8, float8)"
)


@pytest.mark.usefixtures("retired_sql")
async def test_the_store_calls_v8_and_small_partitions_never_reach_v1_to_v7(
    memory: Memory,
) -> None:
    await _fill(memory, SMALL, 10, random.Random(1))
    before = [h.record.id for h in await memory.memories.search(SMALL, "记忆", top_k=3, now=NOW)]
    assert len(before) == 3
    # Throwaway database: without v1 the small-partition path still answers the same...
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v1{SIGNATURE}")
    after = [h.record.id for h in await memory.memories.search(SMALL, "记忆", top_k=3, now=NOW)]
    assert after == before
    # ...and without v2 as well (the named query search_memories calls v3 since 0006)...
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v2{SIGNATURE}")
    after = [h.record.id for h in await memory.memories.search(SMALL, "记忆", top_k=3, now=NOW)]
    assert after == before
    # ...and without v3's entry point (the store calls search_memories_v4 since 0012)...
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v3{SIGNATURE}")
    after = [h.record.id for h in await memory.memories.search(SMALL, "记忆", top_k=3, now=NOW)]
    assert after == before
    # ...and without v4's (the store called search_memories_v5 from 0023_l2_fast)...
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v4{SIGNATURE_V4}")
    after = [h.record.id for h in await memory.memories.search(SMALL, "记忆", top_k=3, now=NOW)]
    assert after == before
    # ...and without v5's (0023_l2_fast; kept installed for the previous release's processes)...
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v5{SIGNATURE_V4}")
    after = [h.record.id for h in await memory.memories.search(SMALL, "记忆", top_k=3, now=NOW)]
    assert after == before
    # ...and without v6's (0031_read_fast; v7 still runs v6's bodies on an HNSW partition)...
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v6{SIGNATURE_V4}")
    after = [h.record.id for h in await memory.memories.search(SMALL, "记忆", top_k=3, now=NOW)]
    assert after == before
    # ...but without v7 it cannot search: v7 is what it calls.
    # ...and without v7's (0037_hybrid_fast; the store calls search_memories_v8 from
    # 0048_keyword_intersect, which has v7's checks and dispatch on its own bodies)...
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v7{SIGNATURE_V4}")
    after = [h.record.id for h in await memory.memories.search(SMALL, "记忆", top_k=3, now=NOW)]
    assert after == before
    # ...but without v8 it cannot search: v8 is what it calls.
    await memory.pool.execute(f"DROP FUNCTION amrita_memory.search_memories_v8{SIGNATURE_V4}")
    with pytest.raises(Exception, match="search_memories_v8"):
        await memory.memories.search(SMALL, "记忆", top_k=3, now=NOW)
