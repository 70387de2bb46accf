"""Embedding-model changes: online, resumable re-embedding in transactional batches."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.domain.errors import EmbeddingError
from amrita_memory_pg.embedding.hashing import HashingProvider
from amrita_memory_pg.maintenance.reembed import reindex, reindex_state
from amrita_memory_pg.storage.memories import FingerprintMismatch
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.tools.context import ToolContext
from tests.support.cli import clean_env, run_cli
from tests.support.data import bulk_insert
from tests.support.memory import add_knowledge, memory_on
from tests.support.vectors import as_stored

KEY = "QQPlatform_Private_10001"


async def _seed(dsn: str, data_dir: Path, n: int = 40) -> list[str]:
    async with memory_on(dsn, data_dir) as mem:
        ids = [
            (
                await mem.memories.add(
                    partition_key=KEY, scope="user", content=f"第{i}条 记忆 关于 猫 和 咖啡 {i}"
                )
            ).id
            for i in range(n)
        ]
        await add_knowledge(mem, "0000000a", "猫的饮食", "猫不能吃巧克力")
        await add_knowledge(mem, "0000000b", "咖啡", "咖啡因对猫有害")
    return ids


async def test_reembed_to_another_dimension_covers_memories_and_knowledge(
    db_dsn: str, tmp_path: Path
) -> None:
    ids = await _seed(db_dsn, tmp_path)
    async with memory_on(db_dsn, tmp_path, embedding__hash_dim=1024) as mem:
        report = await reindex(mem.pool, mem.embedder, batch_size=7)
        assert (report.memories, report.knowledge, report.dim) == (40, 2, 1024)
        assert report.embedded == 42
        rows = await mem.pool.fetch(
            "SELECT id, content, embedding, embed_fingerprint FROM amrita_memory.memory ORDER BY id"
        )
        assert sorted(ids) == [r["id"] for r in rows]
        provider = HashingProvider(1024)
        for r in rows:
            assert r["embed_fingerprint"] == mem.embedder.fingerprint
            assert np.allclose(r["embedding"], as_stored(provider.vector(r["content"])), atol=1e-6)
        kn = await mem.pool.fetch(
            "SELECT embed_fingerprint, vector_dims(embedding) AS d FROM amrita_memory.knowledge"
        )
        assert {(r["embed_fingerprint"], r["d"]) for r in kn} == {(mem.embedder.fingerprint, 1024)}
        meta = await mem.pool.fetchrow(
            "SELECT embed_fingerprint, embed_model, embed_dim FROM amrita_memory.store_meta"
        )
        assert tuple(meta.values()) == (mem.embedder.fingerprint, "hash-1024", 1024)
        assert await reindex_state(mem.pool) is None
        assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.reembed_staging") == 0
        hits = await mem.memories.search(KEY, "猫 和 咖啡", top_k=3)
        assert len(hits) == 3
        # Writes with the new model are accepted again.
        await mem.memories.add(partition_key=KEY, scope="user", content="新模型写入")


async def test_reads_keep_working_during_the_reembed(db_dsn: str, tmp_path: Path) -> None:
    await _seed(db_dsn, tmp_path, n=60)
    async with (
        memory_on(db_dsn, tmp_path) as old,
        memory_on(db_dsn, tmp_path, embedding__hash_dim=1024) as new,
    ):
        reads = 0
        switched = asyncio.Event()
        gate = asyncio.Event()

        def progress(done: int, total: int) -> None:
            gate.set()

        async def reader() -> None:
            nonlocal reads
            await gate.wait()
            while not switched.is_set():
                try:
                    hits = await old.memories.search(KEY, "猫", top_k=5)
                except FingerprintMismatch:
                    # Only possible once the switch has committed: from then on the store
                    # holds the new model's vectors.
                    stored = await old.pool.fetchval(
                        "SELECT embed_fingerprint FROM amrita_memory.store_meta"
                    )
                    assert stored == new.embedder.fingerprint
                    break
                assert len(hits) == 5
                reads += 1
                await asyncio.sleep(0)

        async def writer() -> None:
            try:
                await reindex(new.pool, new.embedder, batch_size=3, progress=progress)
            finally:
                switched.set()

        await asyncio.gather(reader(), writer())
        assert reads > 0
        # After the switch an old-config reader gets a clear error, not a crash.
        reply = await old.call_tool(
            "read_memory",
            {"query": "猫", "scope": "user"},
            ToolContext(platform="qq", user_id="10001"),
        )
        assert '"status": "error"' in reply and "reindex" in reply


async def test_writes_and_edits_during_the_reembed_are_picked_up(
    db_dsn: str, tmp_path: Path
) -> None:
    ids = await _seed(db_dsn, tmp_path, n=30)
    async with (
        memory_on(db_dsn, tmp_path) as old,
        memory_on(db_dsn, tmp_path, embedding__hash_dim=256) as new,
    ):
        injected = False

        def progress(done: int, total: int) -> None:
            nonlocal injected
            if done >= 10 and not injected:
                injected = True
                asyncio.get_running_loop().create_task(edit())

        async def edit() -> None:
            await old.memories.update(KEY, ids[0], content="改过的内容 狗")
            await old.memories.add(partition_key=KEY, scope="user", content="重嵌入期间的新记忆")

        task_holder: list[asyncio.Task[None]] = []

        async def run() -> None:
            await reindex(new.pool, new.embedder, batch_size=5, progress=progress)

        await run()
        await asyncio.gather(*task_holder)
        rows = await new.pool.fetch(
            "SELECT id, content, embedding, embed_fingerprint FROM amrita_memory.memory"
        )
        provider = HashingProvider(256)
        assert len(rows) in (
            31,
            30,
        )  # the add may land after the switch (then refused by fingerprint)
        for r in rows:
            assert r["embed_fingerprint"] == new.embedder.fingerprint
            assert np.allclose(
                r["embedding"], as_stored(provider.vector(r["content"])), atol=1e-6
            ), r["content"]


async def test_embedder_outage_rolls_back_the_batch_and_a_later_run_completes(
    db_dsn: str, tmp_path: Path
) -> None:
    await _seed(db_dsn, tmp_path, n=20)
    overrides = {
        "embedding__protocol": "ollama-embed",
        "embedding__model_name": "bge-m3",
        "embedding__max_retries": 0,
        "embedding__batch_size": 64,
    }
    with StubEmbeddingServer(dim=512, fail_on_batch={3: 500}) as server:
        async with memory_on(db_dsn, tmp_path, embedding__model_url=server.url, **overrides) as mem:
            with pytest.raises(EmbeddingError) as err:
                await reindex(mem.pool, mem.embedder, batch_size=4)
            assert "HTTP 500" in str(err.value) and server.url in str(err.value)
            # Batches 1 and 2 are staged; batch 3 wrote nothing; live vectors untouched.
            assert (
                await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.reembed_staging") == 8
            )
            old_fp = await mem.pool.fetchval(
                "SELECT DISTINCT embed_fingerprint FROM amrita_memory.memory"
            )
            assert old_fp != mem.embedder.fingerprint
            state = await reindex_state(mem.pool)
            assert state is not None and (state.staged, state.pending) == (8, 14)
            report = await reindex(mem.pool, mem.embedder, batch_size=4)
            assert (report.resumed, report.embedded, report.memories, report.knowledge) == (
                8,
                14,
                20,
                2,
            )
            assert (
                await mem.pool.fetchval(
                    "SELECT count(*) FROM amrita_memory.memory WHERE embed_fingerprint <> $1",
                    mem.embedder.fingerprint,
                )
                == 0
            )


async def _staged(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM amrita_memory.reembed_staging"))
    finally:
        await conn.close()


@pytest.mark.slow
async def test_kill_9_mid_reindex_then_rerun_loses_nothing(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await mem.memories.add(
            partition_key=KEY, scope="user", content="种子"
        )  # records the 384-d model
        await bulk_insert(
            mem.pool,
            count=6000,
            created_at=datetime.now(UTC),
            importance=5,
            dim=384,
            fingerprint=mem.embedder.fingerprint,
        )
        before = await mem.pool.fetch("SELECT id FROM amrita_memory.memory ORDER BY id")
    env = clean_env(
        {
            "DATABASE_URL": db_dsn,
            "EMBEDDING_PROCTOL": "hash",
            "AMRITA_MEMORY_EMBEDDING__HASH_DIM": "1024",
            "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "cli"),
            "REEMBED_BATCH_SIZE": "16",
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "amrita_memory_pg.cli.main", "reindex", "--yes"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    target = random.Random(os.getpid()).randint(100, 4000)
    try:
        for _ in range(3000):
            if await _staged(db_dsn) >= target or proc.poll() is not None:
                break
            await asyncio.sleep(0.01)
        assert proc.poll() is None, (
            f"reindex ended before it could be killed: {proc.communicate()[1]!r}"
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    staged = await _staged(db_dsn)
    assert 0 < staged < 6001
    result = run_cli(
        "reindex",
        "--yes",
        env={
            k: v
            for k, v in env.items()
            if k
            in (
                "DATABASE_URL",
                "EMBEDDING_PROCTOL",
                "AMRITA_MEMORY_EMBEDDING__HASH_DIM",
                "AMRITA_MEMORY_DATA_DIR",
                "REEMBED_BATCH_SIZE",
            )
        },
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "resuming" in result.stdout and "staged by the last run" in result.stdout
    async with memory_on(db_dsn, tmp_path, embedding__hash_dim=1024) as mem:
        after = await mem.pool.fetch("SELECT id FROM amrita_memory.memory ORDER BY id")
        assert after == before
        bad = await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.memory WHERE embed_fingerprint <> $1 OR embedding IS NULL "
            "OR vector_dims(embedding) <> 1024",
            mem.embedder.fingerprint,
        )
        assert bad == 0
        assert "ETA" in result.stderr and "rows/s" in result.stderr
