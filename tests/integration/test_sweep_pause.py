"""A pause keeps its memories, also through the sweep: ``sweep --force``
neither demotes nor purges a paused partition's rows; after resume they are swept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.data import bulk_insert
from tests.support.memory import memory_on


async def test_a_forced_sweep_skips_paused_partitions(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, decay__sweep_enabled=False) as mem:
        old = datetime.now(UTC) - timedelta(days=400)
        await bulk_insert(mem.pool, count=40, created_at=old, importance=2, partitions=2)
        keys = [
            r[0]
            for r in await mem.pool.fetch(
                "SELECT DISTINCT partition_key FROM amrita_memory.memory ORDER BY 1"
            )
        ]
        assert len(keys) == 2
        paused, other = keys
        await mem.trail.pause(paused, by="person:test", reason=None, now=datetime.now(UTC))
        before = await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1", paused
        )
        swept = run_cli(
            "sweep",
            "--force",
            env={"DATABASE_URL": db_dsn, "AMRITA_MEMORY_DATA_DIR": str(tmp_path)},
        )
        assert swept.returncode == 0, swept.stderr
        counts = dict(
            await mem.pool.fetch(
                "SELECT partition_key, count(*) FROM amrita_memory.memory GROUP BY 1"
            )
        )
        assert counts == {paused: before}  # the other partition was purged, the paused kept
        assert other not in counts
        await mem.trail.resume(paused)
        report = await mem.memories.sweep(force=True)
        assert report.purged == before
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0
