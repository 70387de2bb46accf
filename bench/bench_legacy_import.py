"""import-legacy throughput: an old installation of N memories merged into an empty store.

Not a test. Builds the old layout (real chromadb directory, SQLite memo table) with
tests/support/legacy.py, opens a throwaway embedded store with the ``hash`` embedder, and
times three runs: re-embedding (the old fingerprint is another model's), the same import
again (idempotent: everything ``present``), and vector reuse into an emptied store (the
old fingerprint is ours). The hash embedder costs microseconds, so the numbers are the
import's own cost (Chroma read, planning, one transaction per batch), not a model's.

    .venv/bin/python bench/bench_legacy_import.py                 # 5000 memories / 50 partitions
    .venv/bin/python bench/bench_legacy_import.py --memories 20000 --partitions 100
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amrita_memory_pg.bootstrap import open_store
from amrita_memory_pg.embedding.hashing import HashingProvider
from amrita_memory_pg.maintenance.legacy_import import import_legacy
from tests.support.legacy import build_old_install


async def main(memories: int, partitions: int, batch: int) -> None:
    per = max(1, memories // partitions)
    layout = [(f"user_{10000 + p}", "user", per) for p in range(partitions)]
    with tempfile.TemporaryDirectory(prefix="bench-legacy-") as tmp:
        root = Path(tmp)
        async with open_store(
            data_dir=str(root / "store"),
            embedding__protocol="hash",
            embedding__reembed_batch_size=batch,
            per_session_memory_limit=per,
        ) as store:
            await store.embedder.prepare()
            hashing = HashingProvider(store.embedder.dim or 384)
            started = time.perf_counter()
            other = build_old_install(
                root / "other",
                fingerprint="0" * 64,
                vector_of=lambda t: hashing.vector(t).tolist(),
                partitions=layout,
            )
            ours = build_old_install(
                root / "ours",
                fingerprint=store.embedder.fingerprint,
                vector_of=lambda t: hashing.vector(t).tolist(),
                partitions=layout,
            )
            print(
                f"built 2 old installations of {per * partitions} memories in "
                f"{time.perf_counter() - started:.1f} s"
            )
            for label, data_dir in (
                ("re-embed", other.data_dir),
                ("again (idempotent)", other.data_dir),
            ):
                started = time.perf_counter()
                report = await import_legacy(store, data_dir)
                elapsed = time.perf_counter() - started
                n = sum(report.counts["memory"].values())
                print(
                    f"{label:22} {elapsed:7.2f} s  {n / elapsed:8.0f} memories/s  "
                    f"{dict(report.counts['memory'])}"
                )
            await store.pool.execute("DELETE FROM amrita_memory.memory")
            started = time.perf_counter()
            report = await import_legacy(store, ours.data_dir)
            elapsed = time.perf_counter() - started
            n = report.counts["memory"]["inserted"]
            print(
                f"{'reuse vectors':22} {elapsed:7.2f} s  {n / elapsed:8.0f} memories/s  "
                f"reused {report.vectors_reused}, embedded {report.vectors_embedded}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--batch", type=int, default=64, help="REEMBED_BATCH_SIZE")
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.partitions, args.batch))
