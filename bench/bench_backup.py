"""Whole-store backups: how long create, verify and restore take.

Not a test. Opens a throwaway store (embedded PostgreSQL in a temporary directory, the
hashing embedder, 384 dimensions), fills N memories over 100 partitions in bulk SQL (the
trail records a change row per memory, each memory gets one access-log row), then times

* ``create`` — pg_dump + JSONL from one snapshot, with the per-table digests;
* ``verify`` — both files restored into throwaway databases and compared;
* ``restore`` — the JSONL back over the live store (safety backup included).

    .venv/bin/python bench/bench_backup.py                 # 5,000 memories
    .venv/bin/python bench/bench_backup.py --memories 100000
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.maintenance.backup import create_backup, table_digests
from amrita_memory_pg.maintenance.restore import restore_backup
from amrita_memory_pg.maintenance.verify import verify_backup
from amrita_memory_pg.settings import load_settings

FILL = """
INSERT INTO amrita_memory.memory
       (partition_key, scope, content, tags, importance, source, embedding, embed_fingerprint)
SELECT 'QQPlatform_Private_' || (g % 100), 'user', '记忆 ' || g || '：喜欢 猫 and tea',
       ARRAY['t', (g % 7)::text], 1 + g % 10, 'auto',
       (SELECT array_agg(sin(g * 0.001 + d))::real[]::vector FROM generate_series(1, 384) d),
       (SELECT embed_fingerprint FROM amrita_memory.store_meta)
  FROM generate_series($1::integer, $2::integer) g
"""
ACCESS = """
INSERT INTO amrita_memory.memory_access (partition_key, memory_id, at, surface, query, score)
SELECT partition_key, id, now(), 'tool', '猫', 0.5 FROM amrita_memory.memory
"""


async def main(memories: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-backup-") as tmp:
        settings = load_settings(
            env={},
            read_default_files=False,
            overrides={
                "data_dir": str(Path(tmp)),
                "embedding.protocol": "hash",
                "per_session_memory_limit": memories,
            },
        )
        async with open_memory(settings, startup=False) as mem:
            await mem.memories.add(partition_key="global", scope="global", content="种子")
            for start in range(1, memories, 5000):
                await mem.pool.execute(FILL, start, min(start + 4999, memories - 1))
            await mem.pool.execute(ACCESS)
            rows = await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory")
            history = await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory_change")
            print(f"store: {rows} memories, {history} history rows, {rows} access rows")

            started = time.perf_counter()
            async with mem.pool.acquire() as conn:
                await table_digests(conn)
            print(f"digests {time.perf_counter() - started:6.2f} s  (every table, part of create)")

            started = time.perf_counter()
            info = await create_backup(mem.store)
            created = time.perf_counter() - started
            size = info.size / 1e6
            print(f"create  {created:6.2f} s  ({size:.1f} MB: jsonl + dump)")

            started = time.perf_counter()
            report = await verify_backup(mem.store, info.stem)
            print(f"verify  {time.perf_counter() - started:6.2f} s  ok={report.ok}")

            started = time.perf_counter()
            await restore_backup(mem.store, info.jsonl_path)
            print(f"restore {time.perf_counter() - started:6.2f} s  (jsonl, with safety backup)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5000)
    args = parser.parse_args()
    asyncio.run(main(args.memories))
