"""The walks over the whole table hold one page of rows at a time, not the table.

A store of a million memories is gigabytes of text and vectors: a backup, a restore, a
re-tokenization, a re-embed or a sweep that fetched it whole would take that much memory
in the bot. Each walk here runs over ROWS memories of about 4 KB each with tracemalloc
on, its pages made PAGE rows long (1/50 of the table), and its peak of Python memory
must stay under a quarter of what holding every row at once takes (measured on the same
rows: a ``fetch`` of the table) — a walk that read the whole table, or a whole file, at
once would reach it. Memory, not time: nothing here is timed.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.embedding.base import Embedder
from amrita_memory_pg.embedding.hashing import HashingProvider
from amrita_memory_pg.maintenance import backup as backup_module
from amrita_memory_pg.maintenance import restore as restore_module
from amrita_memory_pg.maintenance import tokens as tokens_module
from amrita_memory_pg.maintenance.backup import BackupInfo, create_backup
from amrita_memory_pg.maintenance.reembed import reindex
from amrita_memory_pg.maintenance.restore import copy_rows, restore_backup
from amrita_memory_pg.maintenance.tokens import backfill_tokens
from tests.support.memory import memory_on
from tests.support.pg import PgServer

ROWS = 2500
#: rows per page of every walk here (the product's pages are 500 rows, or 64 vectors)
PAGE = 50


async def peak(work: Callable[[], Awaitable[Any]]) -> int:
    """The peak of Python memory (bytes) allocated while ``work`` runs."""
    tracemalloc.start()
    try:
        await work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def _fill(dsn: str, data_dir: Path) -> None:
    """ROWS memories of ~1.8 KB of text and a 384-d vector, in 100 partitions."""
    async with memory_on(dsn, data_dir) as mem:
        await mem.memories.add(partition_key="QQPlatform_Private_1", scope="user", content="seed")
        await mem.pool.execute(
            """
            INSERT INTO amrita_memory.memory
                   (id, partition_key, scope, content, importance, embedding, embed_fingerprint,
                    search_tokens)
            SELECT md5('walk' || i), 'QQPlatform_Private_' || (i % 100), 'user',
                   repeat('memory ', 250) || i, 1 + i % 10, s.embedding, s.embed_fingerprint,
                   array_to_tsvector(ARRAY['memori', i::text])
              FROM generate_series(1, $1) i,
                   (SELECT embedding, embed_fingerprint FROM amrita_memory.memory LIMIT 1) s
            """,
            ROWS - 1,
        )


@pytest.fixture
async def walked(
    db_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Path, int]:
    """(dsn, data dir, bytes of every row held at once) of a filled store, the backup's
    and the restore's pages PAGE rows long."""
    monkeypatch.setattr(backup_module, "EXPORT_PAGE", PAGE)
    monkeypatch.setattr(restore_module, "IMPORT_BATCH", PAGE)
    monkeypatch.setattr(tokens_module, "PAGE", PAGE)
    await _fill(db_dsn, tmp_path)
    async with memory_on(db_dsn, tmp_path) as mem:
        whole = await peak(lambda: mem.pool.fetch("SELECT * FROM amrita_memory.memory"))
    return db_dsn, tmp_path, whole


@pytest.fixture
async def backup(walked: tuple[str, Path, int]) -> BackupInfo:
    dsn, data_dir, _whole = walked
    async with memory_on(dsn, data_dir) as mem:
        return await create_backup(mem.store)


async def test_a_backup_of_the_table_holds_a_page_of_rows_at_a_time(
    walked: tuple[str, Path, int],
) -> None:
    dsn, data_dir, whole = walked
    assert whole > ROWS * 3000  # the rows weigh what they should
    async with memory_on(dsn, data_dir) as mem:
        made: list[BackupInfo] = []

        async def take() -> None:
            made.append(await create_backup(mem.store))

        used = await peak(take)
    assert made[0].counts["memory"] == ROWS
    assert used < whole / 4, f"the backup held {used:,} bytes; every row at once is {whole:,}"


@pytest.mark.parametrize("kind", ["jsonl", "dump"])
async def test_a_restore_reads_its_file_as_it_loads_it(
    kind: str,
    walked: tuple[str, Path, int],
    backup: BackupInfo,
    pg_server: PgServer,
    template_db: str,
    tmp_path: Path,
) -> None:
    _dsn, _data_dir, whole = walked
    path = backup.jsonl_path if kind == "jsonl" else backup.dump_path
    target = await pg_server.create_database(template=template_db)
    try:
        async with memory_on(pg_server.dsn(target), tmp_path / "target") as mem:
            reports = []

            async def restore() -> None:
                reports.append(await restore_backup(mem.store, path))

            used = await peak(restore)
        assert reports[0].counts["memory"] == ROWS
        assert used < whole / 4, f"the restore held {used:,} bytes; every row is {whole:,}"
    finally:
        await pg_server.drop_database(target)


async def test_a_retokenization_of_every_memory_holds_one_page(
    walked: tuple[str, Path, int],
) -> None:
    dsn, data_dir, whole = walked
    seen: list[tuple[int, int]] = []
    async with memory_on(dsn, data_dir) as mem:
        used = await peak(
            lambda: backfill_tokens(
                mem.pool,
                retokenize=True,
                progress=lambda done, total: seen.append((done, total)),
            )
        )
        tokens = await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.memory WHERE search_tokens @@ 'memori'::tsquery"
        )
    assert tokens == ROWS - 1  # every filled row was tokenized (the seed's text differs)
    assert seen[0] == (0, ROWS) and seen[-1] == (ROWS, ROWS)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert used < whole / 4, f"the backfill held {used:,} bytes; every row is {whole:,}"
    assert len(seen) >= ROWS // PAGE  # one call per page: the CLI's bar moves


async def test_a_re_embed_of_every_memory_holds_one_batch(walked: tuple[str, Path, int]) -> None:
    dsn, data_dir, whole = walked
    provider = HashingProvider(384)
    provider.model = "hash-384-other"  # another model, same dimension
    async with memory_on(dsn, data_dir) as mem:
        reports = []

        async def run() -> None:
            reports.append(await reindex(mem.pool, Embedder(provider), batch_size=PAGE))

        used = await peak(run)
    assert reports[0].memories == ROWS and reports[0].embedded == ROWS
    assert used < whole / 4, f"the re-embed held {used:,} bytes; every row is {whole:,}"


async def test_a_sweep_of_the_table_holds_no_rows(walked: tuple[str, Path, int]) -> None:
    dsn, data_dir, whole = walked
    async with memory_on(dsn, data_dir) as mem:
        reports = []

        async def run() -> None:
            reports.append(await mem.memories.sweep(force=True))

        used = await peak(run)
    assert reports[0].scanned == ROWS
    assert used < whole / 4, f"the sweep held {used:,} bytes; every row is {whole:,}"


def test_copy_rows_counts_a_block_of_a_pg_restore_script(tmp_path: Path) -> None:
    script = tmp_path / "restore.sql"
    script.write_text(
        "SET x = 1;\n"
        "COPY amrita_memory.memo (partition_key) FROM stdin;\nm1\n\\.\n"
        "COPY amrita_memory.memory (id, content) FROM stdin;\na\tone\nb\ttwo\nc\tthree\n\\.\n",
        encoding="utf-8",
    )
    assert copy_rows(script, "amrita_memory.memory") == 3
    assert copy_rows(script, "amrita_memory.memo") == 1
    assert copy_rows(script, "amrita_memory.knowledge") == 0
    script.write_text("COPY amrita_memory.memory (id) FROM stdin;\na\nb\n", encoding="utf-8")
    assert copy_rows(script, "amrita_memory.memory") == 0  # a block cut short counts nothing
