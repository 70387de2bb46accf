"""Bulk rows for sweep and index tests, inserted set-based (fast and realistic)."""

from __future__ import annotations

from datetime import datetime

import asyncpg


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
