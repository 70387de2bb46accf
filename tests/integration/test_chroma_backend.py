"""The chroma backend beyond the behaviour suite: failed index writes roll back, vectors
without a row never surface, search matches pgvector, rebuild, and remote mode against a
real ``chroma run`` server. Real chromadb everywhere, no mocks."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings as ChromaSettings

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.errors import BackendError
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings, load_settings
from amrita_memory_pg.storage.chroma import ChromaBackend
from amrita_memory_pg.storage.chroma.backend import OWNER_KEY, OWNER_VALUE
from amrita_memory_pg.storage.memories import MemoryRecord, SearchHit
from amrita_memory_pg.tools.context import ToolContext
from tests.support.chroma import ChromaServer, free_port
from tests.support.cli import run_cli
from tests.support.vectors import assert_index_in_step

ALICE = ToolContext(platform="qq", user_id="10001")
BOB = ToolContext(platform="qq", user_id="20002")
KEY = ALICE.personal_key
NOW = datetime(2026, 3, 1, tzinfo=UTC)
COLLECTION = "amrita_user_memory"
TOPICS = ["猫", "狗", "咖啡", "茶", "爬山", "游泳", "编程", "音乐", "电影", "旅行", "北京", "上海"]


@pytest.fixture
def make_settings(db_dsn: str, tmp_path: Path) -> Callable[..., Settings]:
    """Chroma-backend settings on the per-test database; overrides by dotted path."""

    def build(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "database.url": db_dsn,
            "data_dir": str(tmp_path / "data"),
            "embedding.protocol": "hash",
            "vector_backend": "chroma",
            "per_session_memory_limit": 1000,
        }
        values.update({k.replace("__", "."): v for k, v in overrides.items()})
        return load_settings(env={}, read_default_files=False, overrides=values)

    return build


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[Memory]:
    async with open_memory(make_settings()) as mem:
        yield mem


def chroma_of(mem: Memory) -> ChromaBackend:
    assert isinstance(mem.backend, ChromaBackend)
    return mem.backend


@pytest.fixture
def side_client() -> Iterator[Callable[[ChromaBackend], Any]]:
    """Second clients on an index's local directory, as an operator's script would open them."""
    opened: list[Any] = []

    def open_client(index: ChromaBackend) -> Any:
        client = chromadb.PersistentClient(
            path=str(index.path), settings=ChromaSettings(anonymized_telemetry=False)
        )
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        client.close()


async def call(mem: Memory, tool: str, ctx: ToolContext = ALICE, **args: Any) -> dict[str, Any]:
    data = json.loads(await mem.call_tool(tool, args, ctx))
    assert isinstance(data, dict)
    return data


async def write(mem: Memory, content: str, ctx: ToolContext = ALICE, **kw: Any) -> str:
    args = {"content": content, "tags": "t", "importance": "medium", "scope": "user", **kw}
    data = await call(mem, "write_memory", ctx, **args)
    assert data["status"] == "success", data
    return str(data["memory_id"])


async def rows(mem: Memory) -> int:
    return int(await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory"))


async def fill(mem: Memory, count: int, *, partition: str = KEY, seed: int = 7) -> list[str]:
    """``count`` memories of mixed topics, importance, ages and tags."""
    rng = np.random.default_rng(seed)
    ids = []
    for i in range(count):
        a, b = rng.choice(len(TOPICS), size=2, replace=False)
        record = await mem.memories.add(
            partition_key=partition,
            scope="user",
            content=f"第{i}条 喜欢 {TOPICS[a]} 和 {TOPICS[b]}",
            tags=[TOPICS[a], f"t{i % 3}"],
            importance=int(rng.integers(1, 11)),
            now=NOW - timedelta(days=float(rng.uniform(0, 200))),
        )
        ids.append(record.id)
    return ids


# ---------------------------------------------------------------- what is stored where


async def test_vectors_live_in_the_data_dir_with_their_metadata(
    side_client: Callable[[ChromaBackend], Any], memory: Memory, tmp_path: Path
) -> None:
    index = chroma_of(memory)
    mid = await write(memory, "我喜欢猫", importance="high")
    assert index.path == (tmp_path / "data" / "vector_db.chroma").resolve()
    client = side_client(index)
    collection = client.get_collection(COLLECTION, embedding_function=None)
    assert collection.metadata[OWNER_KEY] == OWNER_VALUE
    assert collection.configuration_json["hnsw"]["space"] == "l2"  # squared L2, like our SQL

    async def stored() -> tuple[dict[str, Any], Any, Any]:
        got = collection.get(ids=[mid], include=["metadatas", "embeddings"])
        row = await memory.pool.fetchrow(
            "SELECT embedding, created_at FROM amrita_memory.memory WHERE id = $1", mid
        )
        return dict(got["metadatas"][0]), got["embeddings"][0], row

    meta, vector, row = await stored()
    assert meta == {
        "partition_key": KEY,
        "scope": "user",
        "importance": 8,
        "created_at": pytest.approx(row["created_at"].timestamp()),
    }
    assert np.allclose(vector, row["embedding"])
    # Metadata-only change: Chroma's copy follows; the vector stays.
    await call(memory, "update_memory", id=mid, scope="user", importance="low")
    meta, vector_after, row = await stored()
    assert meta["importance"] == 3 and np.array_equal(vector_after, vector)
    # New content: a new vector on both sides.
    await call(memory, "update_memory", id=mid, scope="user", content="其实我更喜欢狗")
    meta, vector_after, row = await stored()
    assert not np.allclose(vector_after, vector) and np.allclose(vector_after, row["embedding"])


# ---------------------------------------------------------------- a failing index writes nothing


async def test_a_write_into_a_deleted_collection_rolls_back(
    side_client: Callable[[ChromaBackend], Any], memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    index = chroma_of(memory)
    assert await index.check(memory.pool) == (0, 0)  # the collection is open
    side_client(index).delete_collection(COLLECTION)
    data = await call(
        memory, "write_memory", content="写不进去", tags="t", importance="low", scope="user"
    )
    assert data["status"] == "error"
    assert data["message"].startswith(
        f"写入记忆失败: chroma at {index.path} failed to index memory"
    )
    assert "does not exist" in data["message"]
    assert await rows(memory) == 0
    # The next call starts an empty collection and says so; nothing else was lost.
    with caplog.at_level(logging.WARNING):
        kept = await write(memory, "之后能写")
    assert "vanished" in caplog.text and "index rebuild" in caplog.text
    assert await assert_index_in_step(memory) == {kept}


async def test_a_delete_whose_chroma_call_fails_keeps_the_memory(
    side_client: Callable[[ChromaBackend], Any], memory: Memory
) -> None:
    index = chroma_of(memory)
    mid = await write(memory, "删不掉的")
    side_client(index).delete_collection(COLLECTION)
    data = await call(memory, "delete_memory", id=mid, scope="user")
    assert data["status"] == "error" and "chroma at" in data["message"]
    assert await rows(memory) == 1


async def test_an_unreachable_server_writes_nothing(make_settings: Callable[..., Settings]) -> None:
    port = free_port()  # nothing listens there
    settings = make_settings(
        **{"vector_db.type": "remote", "vector_db.server": "127.0.0.1", "vector_db.port": port}
    )
    async with open_memory(settings) as mem:
        data = await call(
            mem, "write_memory", content="x", tags="t", importance="low", scope="user"
        )
        assert data["status"] == "error"
        assert f"chroma at http://127.0.0.1:{port} is unreachable" in data["message"]
        assert await rows(mem) == 0


async def test_a_hung_server_times_out_and_writes_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    """A server that accepts connections and never answers: bounded wait, rollback."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        settings = make_settings(
            **{
                "vector_db.type": "remote",
                "vector_db.server": "127.0.0.1",
                "vector_db.port": port,
                "vector_db.timeout_seconds": 1,
            }
        )
        async with open_memory(settings) as mem:
            started = time.monotonic()
            data = await call(
                mem, "write_memory", content="x", tags="t", importance="low", scope="user"
            )
            assert time.monotonic() - started < 10
            assert data["status"] == "error"
            assert f"chroma at http://127.0.0.1:{port} did not answer within 1 s" in data["message"]
            assert await rows(mem) == 0
            # The transaction and its partition lock are gone: the partition is writable.
            assert (
                await mem.pool.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
                == 0
            )


# ---------------------------------------------------------------- vectors without a row


@pytest.mark.parametrize("path", ["every-row", "ann"])
async def test_a_vector_whose_row_was_rolled_back_never_surfaces(
    make_settings: Callable[..., Settings], path: str
) -> None:
    candidates = 200 if path == "every-row" else 10
    async with open_memory(make_settings(**{"retrieval.ann_candidates": candidates})) as mem:
        index = chroma_of(mem)
        real = set(await fill(mem, 30))
        # What a commit failure after the index write leaves behind: the upsert happened
        # inside a transaction that then rolled back.
        (vector,) = await mem.embedder.embed_passages(["孤儿 咖啡 和 猫"])
        async with mem.pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            row = await conn.fetchrow(
                "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance, "
                "embedding, embed_fingerprint, created_at, updated_at, tier_since) "
                "VALUES ($1, 'user', '孤儿 咖啡 和 猫', 10, $2, $3, $4, $4, $4) "
                "RETURNING id, partition_key, scope, content, tags, importance, category, "
                "source, author, created_at, updated_at",
                KEY,
                vector,
                mem.embedder.fingerprint,
                NOW,
            )
            orphan = MemoryRecord(**dict(row))
            await index.added(orphan, vector)
            await tx.rollback()
        assert await index.check(mem.pool) == (30, 31)
        hits = await mem.memories.search(KEY, "孤儿 咖啡 和 猫", top_k=50, now=NOW)
        found = {h.record.id for h in hits}
        assert orphan.id not in found and found <= real and found
        reply = await call(mem, "read_memory", query="孤儿 咖啡 和 猫", scope="user", top_k=50)
        assert orphan.id not in reply["ids"][0]
        # rebuild clears it
        assert await index.rebuild(mem.pool) == 30
        assert await index.vector_ids([orphan.id]) == set()


# ---------------------------------------------------------------- same answers as pgvector


QUERIES = ["喜欢 咖啡", "猫 和 狗", "北京 旅行", "编程 音乐", "电影"]
FILTERS: list[dict[str, Any]] = [
    {},
    {"importance": (8, 10)},
    {"importance": (1, 3)},
    {"tags": ["t1"]},
    {"tags": ["猫", "茶"], "importance": (4, 7)},
]


def assert_same_ranking(
    got: list[SearchHit], want: list[SearchHit], rel: float = 1e-6, tol: float = 0.0
) -> None:
    """Same hits, order and numbers — up to float rounding: pgvector sums squared
    differences in float32, we (over Chroma's vectors) in float64, so a mathematically
    exact tie may come out of pgvector split by ~1e-7 and ordered differently."""
    assert len(got) == len(want)
    # the ranking key is ``score`` (decay_score is the reference's formula)
    for a, b in zip(got, want, strict=True):
        assert a.score is not None and b.score is not None
        assert a.score == pytest.approx(b.score, rel=rel, abs=tol)
        if a.record.id != b.record.id:  # only inside a tie
            assert abs(a.score - b.score) <= rel * b.score + tol
        else:
            assert a.decay_score == pytest.approx(b.decay_score, rel=rel, abs=tol)
    if not want:
        return
    last = want[-1].score
    assert last is not None
    cutoff = last * (1 + rel) + tol
    assert {h.record.id for h in got if (h.score or 0.0) > cutoff} == {
        h.record.id for h in want if (h.score or 0.0) > cutoff
    }
    by_id = {h.record.id: h for h in want}
    for hit in got:
        other = by_id.get(hit.record.id)
        if other is not None:
            assert hit.record == other.record
            assert hit.keyword_score == pytest.approx(other.keyword_score, rel=1e-9)
            if other.distance is None:  # keyword mode embeds no query
                assert hit.distance is None
                continue
            assert hit.distance == pytest.approx(other.distance, rel=1e-6, abs=1e-9)
            assert hit.age_days == pytest.approx(other.age_days, abs=1e-9)


@pytest.mark.parametrize(
    ("decay", "mode", "fusion"),
    [
        (True, "vector", "rrf"),
        (False, "vector", "rrf"),
        (True, "keyword", "rrf"),
        (True, "hybrid", "weighted"),
        (False, "hybrid", "weighted"),
    ],
)
async def test_search_matches_pgvector_on_small_partitions(
    make_settings: Callable[..., Settings], decay: bool, mode: str, fusion: str
) -> None:
    """Every row of a small partition is a candidate: the same top_k, order and scores, in
    every search mode (the chroma backend fuses in Python, domain/fusion.py). Not RRF
    here: it scores ranks, and this fixture's texts tie exactly in distance, which
    pgvector (float32 sums) splits by rounding noise; test_hybrid_search.py checks the
    Python RRF against the SQL one on pgvector's own distances."""
    common = {
        "decay.enabled": decay,
        "retrieval.default_mode": mode,
        "retrieval.fusion": fusion,
    }
    chroma_settings = make_settings(**common)
    pg_settings = make_settings(**common, vector_backend="pgvector")
    async with open_memory(chroma_settings) as chroma, open_memory(pg_settings) as pg:
        await fill(chroma, 80)
        await fill(chroma, 5, partition=BOB.personal_key, seed=3)
        compared = 0
        for query in QUERIES:
            for where in FILTERS:
                for top_k in (1, 5, 50):
                    args: dict[str, Any] = {"top_k": top_k, "now": NOW, **where}
                    got = await chroma.memories.search(KEY, query, **args)
                    want = await pg.memories.search(KEY, query, **args)
                    # min-max normalisation (weighted fusion) magnifies float32 noise
                    if mode == "hybrid":
                        assert_same_ranking(got, want, rel=1e-4, tol=1e-6)
                    else:
                        assert_same_ranking(got, want)
                    compared += len(got)
        assert compared > (200 if mode == "keyword" else 500)


async def test_large_partitions_take_chromas_nearest_and_keep_demoted_memories(
    side_client: Callable[[ChromaBackend], Any],
    make_settings: Callable[..., Settings],
) -> None:
    """Beyond n rows Chroma proposes candidates under a partition filter; its importance may
    be stale after a sweep demoted in SQL, which must not hide demoted memories."""
    async with open_memory(make_settings(**{"retrieval.ann_candidates": 10})) as mem:
        index = chroma_of(mem)
        old = [
            (
                await mem.memories.add(
                    partition_key=KEY,
                    scope="user",
                    content=f"很久以前 喜欢 {TOPICS[i % 12]} {i}",
                    importance=8,
                    now=NOW - timedelta(days=100),
                )
            ).id
            for i in range(40)
        ]
        await fill(mem, 10, partition=BOB.personal_key)
        await mem.memories.sweep(now=NOW)
        demoted = await mem.pool.fetch(
            "SELECT DISTINCT importance FROM amrita_memory.memory WHERE partition_key = $1", KEY
        )
        assert [r["importance"] for r in demoted] == [5]  # all high → medium in PostgreSQL …
        client = side_client(index).get_collection(COLLECTION, embedding_function=None)
        stale = client.get(ids=old[:1], include=["metadatas"])["metadatas"][0]
        assert stale["importance"] == 8  # … while Chroma's copy still says high
        hits = await mem.memories.search(KEY, "喜欢 咖啡", top_k=3, importance=(4, 7), now=NOW)
        assert len(hits) == 3 and {h.record.importance for h in hits} == {5}
        assert {h.record.id for h in hits} <= set(old)
        scores = [h.decay_score for h in hits]
        assert scores == sorted(scores, reverse=True)
        assert await mem.memories.search(KEY, "喜欢 咖啡", importance=(8, 10), now=NOW) == []
        # rebuild brings Chroma's copy back in step
        await index.rebuild(mem.pool)
        client = side_client(index).get_collection(COLLECTION, embedding_function=None)
        fresh = client.get(ids=old[:1], include=["metadatas"])["metadatas"][0]
        assert fresh["importance"] == 5


# ---------------------------------------------------------------- rebuild and check


async def test_rebuild_restores_a_wiped_collection(
    side_client: Callable[[ChromaBackend], Any],
    make_settings: Callable[..., Settings],
) -> None:
    async with open_memory(make_settings()) as mem:
        index = chroma_of(mem)
        await fill(mem, 40)
        await fill(mem, 9, partition=BOB.personal_key, seed=5)
        before = await mem.memories.search(KEY, "喜欢 咖啡", top_k=10, now=NOW)
        collection = side_client(index).get_collection(COLLECTION, embedding_function=None)
        collection.delete(ids=collection.get(include=[])["ids"])  # wiped
        assert await index.check(mem.pool) == (49, 0)
        assert await mem.memories.search(KEY, "喜欢 咖啡", top_k=10, now=NOW, mode="vector") == []
        # the keyword side lives in PostgreSQL: hybrid still finds the matches, vectorless
        degraded = await mem.memories.search(KEY, "喜欢 咖啡", top_k=10, now=NOW)
        assert degraded and all(h.distance is None for h in degraded)
        assert await index.rebuild(mem.pool, batch_size=7) == 49
        assert await index.check(mem.pool) == (49, 49)
        await assert_index_in_step(mem)
        after = await mem.memories.search(KEY, "喜欢 咖啡", top_k=10, now=NOW)
        assert [h.record.id for h in after] == [h.record.id for h in before]
        # Even a collection dropped outright is recreated and refilled.
        side_client(index).delete_collection(COLLECTION)
        assert await index.rebuild(mem.pool) == 49
        assert [
            h.record.id for h in await mem.memories.search(KEY, "喜欢 咖啡", top_k=10, now=NOW)
        ] == [h.record.id for h in before]


async def test_rebuild_under_concurrent_writes_ends_in_step(
    make_settings: Callable[..., Settings],
) -> None:
    """Writes and deletes while the copy runs: afterwards both sides hold the same ids."""
    async with open_memory(make_settings()) as mem:
        index = chroma_of(mem)
        ids = await fill(mem, 120)

        async def churn() -> int:
            done = 0
            for i in range(40):
                reply = await call(
                    mem,
                    "write_memory",
                    content=f"重建 期间 {i}",
                    tags="t",
                    importance="low",
                    scope="user",
                )
                # A write racing the drop of the old collection may be refused (and rolled back).
                done += reply["status"] == "success"
                await call(mem, "delete_memory", id=ids[i * 3], scope="user")
                await asyncio.sleep(0)
            return done

        rebuilt, written = await asyncio.gather(index.rebuild(mem.pool, batch_size=3), churn())
        assert written > 0
        in_pg = await assert_index_in_step(mem)
        assert len(in_pg) == 120 - 40 + written
        assert rebuilt > 0


async def test_a_foreign_collection_is_never_used_or_dropped(
    side_client: Callable[[ChromaBackend], Any],
    make_settings: Callable[..., Settings],
) -> None:
    """The reference plugin's collection has our default name: refuse it, keep it intact."""
    settings = make_settings()
    index = ChromaBackend(settings)
    client = side_client(index)
    theirs = client.create_collection(COLLECTION, embedding_function=None)
    theirs.add(
        ids=["0" * 32],
        embeddings=[[0.1] * 384],
        documents=["旧插件的记忆"],
        metadatas=[{"user_id": KEY, "importance": "high", "tags": "x"}],
    )
    client.create_collection("an_empty_one", embedding_function=None)
    await index.aclose()
    async with open_memory(settings) as mem:
        data = await call(
            mem, "write_memory", content="x", tags="t", importance="low", scope="user"
        )
        assert data["status"] == "error" and "did not write" in data["message"]
        assert await rows(mem) == 0
        with pytest.raises(BackendError, match="did not write"):
            await chroma_of(mem).rebuild(mem.pool)
    assert client.get_collection(COLLECTION, embedding_function=None).count() == 1
    # An empty collection of that name is simply taken over.
    async with open_memory(make_settings(**{"vector_db.collection": "an_empty_one"})) as mem:
        await write(mem, "可以写")
        adopted = client.get_collection("an_empty_one", embedding_function=None)
        assert adopted.metadata[OWNER_KEY] == OWNER_VALUE and adopted.count() == 1


async def test_cli_checks_and_rebuilds_the_index(
    side_client: Callable[[ChromaBackend], Any],
    make_settings: Callable[..., Settings],
    db_dsn: str,
    tmp_path: Path,
) -> None:
    async with open_memory(make_settings()) as mem:
        await fill(mem, 6)
        index = chroma_of(mem)
        collection = side_client(index).get_collection(COLLECTION, embedding_function=None)
        collection.delete(ids=collection.get(include=[])["ids"][:2])
    env = {
        "DATABASE_URL": db_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_VECTOR_BACKEND": "chroma",
    }
    checked = run_cli("index", "check", env=env)
    assert checked.returncode == 1, checked.stderr
    assert "4 vectors for 6 memories" in checked.stdout and "index rebuild" in checked.stdout
    rebuilt = run_cli("index", "rebuild", env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "6 vectors" in rebuilt.stdout
    status = run_cli("status", env=env)
    assert status.returncode == 0, status.stderr
    assert f"vectors:     chroma at {index.path}: 6 for 6 memories\n" in status.stdout


# ---------------------------------------------------------------- remote mode, for real


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path_factory.mktemp("chroma") / "db", free_port()).start()
    try:
        yield server
    finally:
        server.stop()


def remote_env(port: int, db_dsn: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The reference plugin's .env variables, as an existing user has them."""
    return {
        "DATABASE_URL": db_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
        "AMRITA_MEMORY_VECTOR_BACKEND": "chroma",
        "VECTOR_DB_TYPE": "remote",
        "VECTOR_DB_SERVER": "127.0.0.1",
        "VECTOR_DB_PORT": str(port),
        "VECTOR_DB_SERVER_SSL": "false",
        **extra,
    }


async def test_remote_mode_is_built_from_the_vector_db_variables(
    chroma_server: ChromaServer, db_dsn: str, tmp_path: Path
) -> None:
    port = chroma_server.port
    admin = chromadb.AdminClient(
        ChromaSettings(
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            chroma_server_host="127.0.0.1",
            chroma_server_http_port=port,
            anonymized_telemetry=False,
        )
    )
    admin.create_tenant("amrita_tenant")
    admin.create_database("memories", tenant="amrita_tenant")
    env = remote_env(
        port,
        db_dsn,
        tmp_path,
        VECTOR_DB_REMOTE_HEADERS='{"X-Amrita-Test": "yes"}',
        VECTOR_DB_TENANT="amrita_tenant",
        VECTOR_DB_DATABASE="memories",
    )
    async with open_memory(load_settings(env=env, read_default_files=False)) as mem:
        index = chroma_of(mem)
        mid = await write(mem, "远程 服务器 上的 记忆")
        found = await call(mem, "read_memory", query="远程 记忆", scope="user")
        assert found["ids"] == [[mid]]
        assert index.location == f"http://127.0.0.1:{port}"
        client = index._client
        assert client is not None
        built = client.get_settings()
        assert (built.chroma_server_host, built.chroma_server_http_port) == ("127.0.0.1", port)
        assert built.chroma_server_ssl_enabled is False
        assert built.chroma_server_headers["X-Amrita-Test"] == "yes"
        assert built.anonymized_telemetry is False
        assert (client.tenant, client.database) == ("amrita_tenant", "memories")
    there = chromadb.HttpClient(
        host="127.0.0.1",
        port=port,
        tenant="amrita_tenant",
        database="memories",
        settings=ChromaSettings(anonymized_telemetry=False),
    )
    assert there.get_collection(COLLECTION, embedding_function=None).get(include=[])["ids"] == [mid]


async def test_remote_default_tenant_means_chromas_default(
    chroma_server: ChromaServer, db_dsn: str, tmp_path: Path
) -> None:
    env = remote_env(
        chroma_server.port,
        db_dsn,
        tmp_path,
        VECTOR_DB_TENANT="default",
        VECTOR_DB_DATABASE="default",
        AMRITA_MEMORY_VECTOR_DB__COLLECTION="default_tenant_test",
    )
    async with open_memory(load_settings(env=env, read_default_files=False)) as mem:
        await write(mem, "默认租户")
        client = chroma_of(mem)._client
        assert client is not None
        assert (client.tenant, client.database) == ("default_tenant", "default_database")
        await assert_index_in_step(mem)


async def test_remote_server_going_down_rolls_back_and_coming_back_recovers(
    db_dsn: str, tmp_path: Path
) -> None:
    server = ChromaServer(tmp_path / "chroma", free_port()).start()
    try:
        env = remote_env(server.port, db_dsn, tmp_path)
        async with open_memory(load_settings(env=env, read_default_files=False)) as mem:
            first = await write(mem, "服务器 还在 的时候")
            server.stop()
            update = await call(mem, "update_memory", id=first, scope="user", content="改不了")
            assert update["status"] == "error" and "is unreachable" in update["message"]
            delete = await call(mem, "delete_memory", id=first, scope="user")
            assert delete["status"] == "error" and "is unreachable" in delete["message"]
            read = await call(mem, "read_memory", query="服务器", scope="user")
            assert read["status"] == "error" and read["message"].startswith("检索记忆失败: chroma")
            assert await mem.pool.fetchval("SELECT content FROM amrita_memory.memory") == (
                "服务器 还在 的时候"
            )
            server.start()
            second = await write(mem, "服务器 回来 以后")
            read = await call(mem, "read_memory", query="服务器", scope="user")
            assert set(read["ids"][0]) == {first, second}
            assert await assert_index_in_step(mem) == {first, second}
    finally:
        server.stop()


# ---------------------------------------------------------------- forgetting


async def test_a_forget_and_an_erasure_take_every_vector_they_remove_out_of_chroma(
    memory: Memory,
) -> None:
    """A forget deletes the memory and withholds a memory derived from it and another
    (both leave the table: the collection must follow); an erasure removes a partition."""
    from amrita_memory_pg.domain.lineage import Derivation, deriving

    fact = await write(memory, "用户对花生过敏")
    other = await write(memory, "用户周六爬山")
    with deriving(Derivation("l3", 1, partition_key=KEY)):
        derived = (
            await memory.memories.add(
                partition_key=KEY, scope="user", content="周六爬山，对花生过敏"
            )
        ).id
    await write(memory, "我喜欢狗", BOB, scope="user")
    assert len(await assert_index_in_step(memory)) == 4
    done = await memory.cases.forgetting.forget(KEY, [fact], requested_by="test", by_person=True)
    assert [r.id for r in done.withheld] == [derived]
    assert await assert_index_in_step(memory) == {other, *await _ids(memory, BOB)}
    await memory.cases.forgetting.erase(BOB.personal_key, requested_by="test")
    assert await assert_index_in_step(memory) == {other}


async def _ids(mem: Memory, ctx: ToolContext) -> list[str]:
    rows = await mem.pool.fetch(
        "SELECT id FROM amrita_memory.memory WHERE partition_key = $1", ctx.personal_key
    )
    return [r["id"] for r in rows]
