"""The kept row count of each partition (sql/functions/partition_count.sql): the cap reads
it, the memory table's triggers keep it in the writing transaction. After every path that
adds or removes rows — the insert, the chat tool's write, the previous release's insert,
an extraction's replacement, a delete, a forget cascade, an erasure, the sweep's purge,
an import, a key migration's rename, a JSONL and a dump restore, COPY, TRUNCATE — it
equals count(*) of every partition; concurrent writers and deleters of one partition
keep it exact and under the cap; partition_count_check_v1 finds a broken count and
repairs it, and `amrita-memory status` says so."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.i18n import Catalog
from amrita_memory_pg.maintenance.backup import create_backup
from amrita_memory_pg.maintenance.restore import restore_backup
from amrita_memory_pg.maintenance.status import render_count_drift
from amrita_memory_pg.storage.pg.database import register_vector_codec
from amrita_memory_pg.storage.queries import query
from tests.support.memory import memory_on
from tests.support.pg import PgServer

NOW = datetime(2026, 6, 1, tzinfo=UTC)
P = "QQPlatform_Private_10001"
G = "QQPlatform_Group_20002"
EXACT = (
    "SELECT coalesce(c.partition_key, m.partition_key) AS key, c.n AS kept, m.n AS actual"
    "  FROM amrita_memory.partition_count c"
    "  FULL JOIN (SELECT partition_key, count(*) AS n FROM amrita_memory.memory"
    "              GROUP BY partition_key) m ON m.partition_key = c.partition_key"
    " WHERE c.n IS DISTINCT FROM m.n"
)


def vec(value: float = 1.0, dim: int = 8) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.full(dim, value, dtype=np.float32)


async def insert(
    conn: asyncpg.Connection | asyncpg.Pool,
    key: str = P,
    content: str = "喜欢猫",
    *,
    cap: int = 100,
    function: str | None = None,
) -> Any:
    """One memory through the insert_memory query (or the named insert function)."""
    args = (
        key, "user", content, ["t"], 5, None, "auto", None,
        vec(), "fp", NOW, cap, [content], "hash", "m", None,
    )  # fmt: skip
    if function is None:
        return await conn.fetchrow(query("insert_memory"), *args)
    return await conn.fetchrow(
        f"SELECT * FROM amrita_memory.{function}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,"
        " $11, $12, $13, $14, $15, $16)",
        *args,
    )


async def counts(conn: asyncpg.Connection | asyncpg.Pool) -> dict[str, int]:
    """The kept counts, after checking that they are every partition's rows exactly (no
    row for an empty partition, none missing, none off)."""
    off = [tuple(r) for r in await conn.fetch(EXACT)]
    assert off == [], off
    return {
        r["partition_key"]: r["n"]
        for r in await conn.fetch("SELECT partition_key, n FROM amrita_memory.partition_count")
    }


@pytest.fixture
async def pool(db_dsn: str) -> Any:
    async with asyncpg.create_pool(db_dsn, min_size=4, max_size=4, init=register_vector_codec) as p:
        yield p


async def test_inserts_writes_and_deletes_keep_the_count_and_the_cap_reads_it(
    conn: asyncpg.Connection,
) -> None:
    ids = [(await insert(conn, content=f"记忆 {i}"))["id"] for i in range(3)]
    await insert(conn, G)
    assert await counts(conn) == {P: 3, G: 1}
    # the cap reads the kept count: a count set past the rows refuses the write
    await conn.execute("UPDATE amrita_memory.partition_count SET n = 5 WHERE partition_key = $1", P)
    refused = await insert(conn, content="满了", cap=5)
    assert refused["id"] is None and refused["rows_before"] == 5
    await conn.execute("UPDATE amrita_memory.partition_count SET n = 3 WHERE partition_key = $1", P)
    row = await insert(conn, content="第四条", cap=5)
    assert row["id"] is not None and row["rows_before"] == 3
    # the chat tool's write, and its retry (a duplicate: its rows_before is the count)
    write = (
        P, "user", "每周日游泳", None, 6, "event", "auto", None, vec(2.0), "fp", NOW, 100,
        60.0, ["游泳"], "hash", "m", None,
    )  # fmt: skip
    first = await conn.fetchrow(query("write_memory"), *write)
    again = await conn.fetchrow(query("write_memory"), *write)
    assert again["duplicate"] and again["id"] == first["id"] and again["rows_before"] == 5
    assert await counts(conn) == {P: 5, G: 1}
    # the write counts its own row (the trigger skips it); a statement after it in the same
    # transaction is the trigger's again
    async with conn.transaction():
        await insert(conn, content="同一事务")
        assert await conn.fetchval("SELECT current_setting('amrita_memory.count_by_writer')") == ""
        await conn.execute(
            "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance,"
            " embedding, embed_fingerprint) VALUES ($1, 'user', '直接写入', 5, $2, 'fp')",
            P,
            vec(),
        )
    assert await counts(conn) == {P: 7, G: 1}
    await conn.execute(
        "DELETE FROM amrita_memory.memory WHERE content = ANY($1::text[])", ["同一事务", "直接写入"]
    )
    # the previous release's inserts count the rows themselves; the triggers keep the count
    for function in ("insert_memory_v5", "insert_memory_v6"):
        assert (await insert(conn, content=function, function=function))["id"] is not None
    assert await counts(conn) == {P: 7, G: 1}
    assert (
        await conn.fetchval("SELECT amrita_memory.delete_memory_v1($1, $2, true)", P, ids[0])
        == ids[0]
    )
    await conn.execute("DELETE FROM amrita_memory.memory WHERE partition_key = $1", G)
    # a partition without rows has no count row
    assert await counts(conn) == {P: 6}


async def test_one_statement_over_many_partitions_and_a_partition_move(
    conn: asyncpg.Connection,
) -> None:
    keys = [f"QQPlatform_Private_{i}" for i in range(10, 16)]
    await conn.execute(
        "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance, embedding,"
        " embed_fingerprint) SELECT k, 'user', 'x' || g, 5, $2, 'fp'"
        "   FROM unnest($1::text[]) k, generate_series(1, 4) g",
        keys,
        vec(),
    )
    assert await counts(conn) == dict.fromkeys(keys, 4)
    # the key migration's rename: a row trigger moves each row's count
    await conn.execute(query("rename_memory_partition"), keys[0], "user", "QQPlatform_Private_99")
    await conn.execute(
        "UPDATE amrita_memory.memory SET partition_key = $2"
        " WHERE partition_key = $1 AND content IN ('x1', 'x2')",
        keys[1],
        keys[2],
    )
    # an update that keeps the key changes nothing
    await conn.execute(
        "UPDATE amrita_memory.memory SET importance = 9 WHERE partition_key = $1", keys[3]
    )
    expected = {
        "QQPlatform_Private_99": 4,
        keys[1]: 2,
        keys[2]: 6,
        keys[3]: 4,
        keys[4]: 4,
        keys[5]: 4,
    }
    assert await counts(conn) == expected
    await conn.execute(
        "DELETE FROM amrita_memory.memory WHERE partition_key = ANY($1) AND content <> 'x4'", keys
    )
    assert await counts(conn) == {"QQPlatform_Private_99": 4, keys[1]: 1, keys[2]: 1, keys[3]: 1,
                                  keys[4]: 1, keys[5]: 1}  # fmt: skip
    await conn.execute("TRUNCATE amrita_memory.memory CASCADE")
    assert await counts(conn) == {}


async def test_concurrent_writers_and_deleters_of_one_partition_keep_it_exact_under_the_cap(
    pool: asyncpg.Pool,
) -> None:
    """Two connections insert into one partition while two others delete from it and from
    a second one (multi-partition statements): the count follows every commit, and no
    moment of the run has more rows than the cap."""
    cap = 30
    for i in range(20):
        await insert(pool, G, f"群 {i}", cap=cap)

    async def writer(tag: str) -> None:
        for i in range(60):
            await insert(pool, content=f"{tag} {i}", cap=cap)

    async def deleter() -> None:
        for _ in range(25):
            await pool.execute(
                "DELETE FROM amrita_memory.memory WHERE (partition_key, id) IN"
                " (SELECT partition_key, id FROM amrita_memory.memory"
                "   WHERE partition_key = ANY($1) ORDER BY random() LIMIT 3)",
                [P, G],
            )
            await asyncio.sleep(0.002)

    peak = 0

    async def watcher(done: asyncio.Event) -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(
                peak,
                await pool.fetchval(
                    "SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1", P
                ),
            )
            await asyncio.sleep(0)

    done = asyncio.Event()
    watch = asyncio.create_task(watcher(done))
    try:
        await asyncio.gather(writer("甲"), writer("乙"), deleter())
    finally:
        done.set()
        await watch
    assert 0 < peak <= cap
    # counts() asserts every kept count equals its partition's rows; the deleter may
    # outlast the writers and empty P, and an empty partition keeps no count row
    kept = await counts(pool)
    assert kept.get(P, 0) <= cap


async def test_an_extraction_a_forget_an_erasure_and_the_sweep_keep_the_count(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        ids = [
            (await mem.memories.add(partition_key=P, scope="user", content=f"记忆 {i}",
                                    importance=1 + i % 10, now=NOW - timedelta(days=400))).id
            for i in range(12)
        ]  # fmt: skip
        for i in range(5):
            await mem.memories.add(partition_key=G, scope="group", content=f"群记忆 {i}")
        assert await counts(mem.pool) == {P: 12, G: 5}
        # an extraction's replacement: deletes its earlier rows and inserts its new ones
        embedder = mem.embedder
        entries: list[Any] = [("提取 1", None, 5), ("提取 2", None, 6)]
        vectors = await embedder.embed_passages([e[0] for e in entries])
        for _ in range(2):  # the second run replaces the first's rows
            await mem.memories.repo.replace_auto(
                G, "group", entries, vectors, fingerprint=embedder.fingerprint,
                provider=embedder.provider, now=NOW,
            )  # fmt: skip
        assert await counts(mem.pool) == {P: 12, G: 7}
        # a forget (its cascade runs in SQL)
        await mem.pool.fetch(
            "SELECT * FROM amrita_memory.forget_memories_v1($1, $2, '{}', '{}', 'test', now(), false)",
            P,
            ids[:2],
        )
        assert await counts(mem.pool) == {P: 10, G: 7}
        # the sweep purges the old low memories (one pass, the product's settings)
        report = await mem.memories.sweep(now=NOW, force=True)
        assert report.purged > 0
        remaining = await counts(mem.pool)
        assert remaining[P] == 10 - report.purged and remaining[G] == 7
        # an erasure: the partition's count row goes with its rows
        await mem.pool.fetch(
            "SELECT * FROM amrita_memory.erase_partition_v1($1, 'test', now(), false, true)", P
        )
        assert await counts(mem.pool) == {G: 7}


async def test_an_import_counts_and_is_capped_by_the_kept_count(
    conn: asyncpg.Connection,
) -> None:
    await insert(conn)
    batch = (
        [f"{i:032x}" for i in range(4)], [P] * 4, ["user"] * 4, [f"导入 {i}" for i in range(4)],
        [""] * 4, [5] * 4, [NOW] * 4, ["[1,1,1,1,1,1,1,1]"] * 4, "fp", NOW, 3, False,
        "hash", "m", None,
    )  # fmt: skip
    outcomes = [r["outcome"] for r in await conn.fetch(query("import_memories"), *batch)]
    assert outcomes == ["inserted", "inserted", "full", "full"]
    again = [r["outcome"] for r in await conn.fetch(query("import_memories"), *batch)]
    assert again == ["present", "present", "full", "full"]
    assert await counts(conn) == {P: 3}


async def test_a_jsonl_and_a_dump_restore_leave_exact_counts(
    db_dsn: str, pg_server: PgServer, template_db: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        for i in range(7):
            await mem.memories.add(partition_key=P, scope="user", content=f"记忆 {i}")
        for i in range(3):
            await mem.memories.add(partition_key=G, scope="group", content=f"群 {i}")
        info = await create_backup(mem.store)
        for i in range(4):  # rows the restore takes away again
            await mem.memories.add(partition_key=G, scope="group", content=f"之后 {i}")
        await mem.memories.add(partition_key="global", scope="global", content="之后")
        assert await counts(mem.pool) == {P: 7, G: 7, "global": 1}
        for source in (info.jsonl_path, info.dump_path):
            await restore_backup(mem.store, source, force=True)
            assert await counts(mem.pool) == {P: 7, G: 3}, source.suffix
            assert await mem.memories.add(partition_key=G, scope="group", content="新")
            assert await counts(mem.pool) == {P: 7, G: 4}, source.suffix
            await mem.pool.execute(
                "DELETE FROM amrita_memory.memory WHERE partition_key = $1 AND content = '新'", G
            )


async def test_the_check_finds_a_broken_count_and_repairs_it(conn: asyncpg.Connection) -> None:
    for i in range(3):
        await insert(conn, content=f"记忆 {i}")
    await insert(conn, G)
    check = "SELECT partition_key, kept, actual FROM amrita_memory.partition_count_check_v1($1)"
    assert await conn.fetch(check, False) == []
    # off by some, missing, and one for a partition without rows
    await conn.execute("UPDATE amrita_memory.partition_count SET n = 9 WHERE partition_key = $1", P)
    await conn.execute("DELETE FROM amrita_memory.partition_count WHERE partition_key = $1", G)
    await conn.execute("INSERT INTO amrita_memory.partition_count VALUES ('global', 2)")
    drift = [tuple(r) for r in await conn.fetch(check, False)]
    assert drift == [(G, 0, 1), (P, 9, 3), ("global", 2, 0)]
    t = Catalog("amrita_memory_pg").translator("en")
    line = render_count_drift(drift, t)
    assert "3 partitions differ" in line and "partition_count_check_v1(true)" in line
    assert "exact" in render_count_drift([], t)
    assert [tuple(r) for r in await conn.fetch(check, False)] == drift  # the check changes nothing
    assert [tuple(r) for r in await conn.fetch(check, True)] == drift
    assert await conn.fetch(check, False) == []
    assert await counts(conn) == {P: 3, G: 1}
    async with conn.transaction(isolation="repeatable_read"):
        with pytest.raises(asyncpg.PostgresError, match="READ COMMITTED"):
            await conn.fetch(check, True)


async def test_status_shows_the_kept_counts(db_dsn: str, tmp_path: Path) -> None:
    from amrita_memory_pg.maintenance.status import StatusReport, collect_store_status

    async with memory_on(db_dsn, tmp_path) as mem:
        await mem.memories.add(partition_key=P, scope="user", content="喜欢猫")
        report = StatusReport(server=None, revision=None, head="")  # type: ignore[arg-type]
        await collect_store_status(mem.store, report)
        assert report.count_drift == []
        await mem.pool.execute("UPDATE amrita_memory.partition_count SET n = 4")
        await collect_store_status(mem.store, report)
        assert report.count_drift == [(P, 4, 1)]
