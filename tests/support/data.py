"""Bulk rows for sweep and index tests, inserted set-based (fast and realistic)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg

if TYPE_CHECKING:
    from amrita_memory_pg.memory import Memory


async def bulk_insert(
    pool: asyncpg.Pool | asyncpg.Connection,
    *,
    count: int,
    created_at: datetime,
    importance: int,
    partitions: int = 100,
    partition_prefix: str = "QQPlatform_Private_",
    dim: int = 8,
    fingerprint: str = "bulk",
) -> None:
    """``count`` memories spread over ``partitions`` partitions, random unit-ish vectors."""
    await pool.execute(
        """
        INSERT INTO amrita_memory.memory
               (partition_key, scope, content, importance, created_at, updated_at, tier_since,
                embedding, embed_fingerprint)
        SELECT $1 || (g % $2), 'user', 'bulk memory ' || g, $3, $4, $4, $4,
               (SELECT array_agg(random())::real[]::vector FROM generate_series(1, $5) WHERE g > 0),
               $6
          FROM generate_series(1, $7) AS g
        """,
        partition_prefix,
        partitions,
        importance,
        created_at,
        dim,
        fingerprint,
        count,
    )


async def random_memories(
    mem: Memory, partition: str, n: int, rng: random.Random, now: datetime
) -> None:
    """``n`` memories through the service, of random scope, tags and importance, aged 0 to
    400 days before ``now`` (a few after it): the search-parity tests' data."""
    for i in range(n):
        await mem.memories.add(
            partition_key=partition,
            scope=rng.choice(["user", "group"]),
            content=f"记忆 {partition} {i} {rng.random():.6f}",
            tags=rng.sample(["猫", "狗", "茶", "山"], rng.randint(0, 2)),
            importance=rng.randint(1, 10),
            # ages from 0 to 400 days, and a few in the future (age 0)
            now=now - timedelta(days=rng.uniform(-2, 400)),
        )
