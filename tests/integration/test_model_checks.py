"""Every write of a vector checks the embedding model in the database: the fingerprint
(SQLSTATE AMF01) and the dimension (AMF03), for inserts (the insert_memory query) and
updates (update_memory_guarded, update_memory_v3); the store's dimension is recorded by the
first write."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.storage.pg.database import register_vector_codec
from amrita_memory_pg.storage.queries import query

NOW = datetime(2026, 6, 1, tzinfo=UTC)
P = "QQPlatform_Private_10001"


def vec(dim: int, value: float = 1.0) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.full(dim, value, dtype=np.float32)


async def insert(
    conn: asyncpg.Connection | asyncpg.Pool,
    vector: Any,
    fingerprint: str = "fp-a",
    *,
    partition: str = P,
    content: str = "喜欢猫",
    cap: int = 100,
) -> Any:
    return await conn.fetchrow(
        query("insert_memory"),
        partition, "user", content, ["t"], 5, None, "user", None,
        vector, fingerprint, NOW, cap, [content], "hash", "model-a", None,
    )  # fmt: skip


async def update(conn: asyncpg.Connection, memory_id: str, **changes: Any) -> list[Any]:
    return await conn.fetch(
        query("update_memory_guarded"),
        changes.get("partition", P),
        memory_id,
        changes.get("content"),
        changes.get("tags"),
        changes.get("importance"),
        "category" in changes,
        changes.get("category"),
        changes.get("embedding"),
        changes.get("fingerprint", "fp-a"),
        changes.get("now", NOW + timedelta(hours=1)),
        changes.get("tokens"),
        False,  # the manual-entry guard is not what these tests are about
    )


async def meta(conn: asyncpg.Connection) -> dict[str, Any]:
    row = await conn.fetchrow(
        "SELECT embed_fingerprint, embed_dim, embed_protocol, embed_model "
        "FROM amrita_memory.store_meta WHERE id = 1"
    )
    assert row is not None
    return dict(row.items())


async def row_of(conn: asyncpg.Connection, memory_id: str) -> dict[str, Any]:
    row = await conn.fetchrow(
        "SELECT content, tags, importance, embedding::text AS embedding, embed_fingerprint, "
        "updated_at, tier_since FROM amrita_memory.memory WHERE id = $1",
        memory_id,
    )
    assert row is not None
    return dict(row.items())


async def rows(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM amrita_memory.memory"))


async def refused(sqlstate: str, call: Any) -> asyncpg.PostgresError:
    with pytest.raises(asyncpg.PostgresError) as info:
        await call
    assert info.value.sqlstate == sqlstate, info.value
    return info.value


# ---------------------------------------------------------------- recording the model


async def test_the_first_insert_into_an_empty_store_records_fingerprint_and_dimension(
    conn: asyncpg.Connection,
) -> None:
    assert await meta(conn) == {
        "embed_fingerprint": None, "embed_dim": None, "embed_protocol": None, "embed_model": None
    }  # fmt: skip
    row = await insert(conn, vec(8))
    assert row["id"] is not None and row["rows_before"] == 0
    assert await meta(conn) == {
        "embed_fingerprint": "fp-a", "embed_dim": 8, "embed_protocol": "hash", "embed_model": "model-a"
    }  # fmt: skip


async def test_after_a_normal_start_the_first_insert_records_the_dimension(
    conn: asyncpg.Connection,
) -> None:
    """Start-up records the fingerprint without a dimension (embed_dim NULL): F2's store."""
    await conn.execute(
        "UPDATE amrita_memory.store_meta SET embed_fingerprint = 'fp-a', embed_model = 'm' WHERE id = 1"
    )
    await insert(conn, vec(8))
    assert (await meta(conn))["embed_dim"] == 8
    await refused("AMF03", insert(conn, vec(9)))
    assert await rows(conn) == 1


async def test_an_unrecorded_dimension_is_taken_from_the_stored_vectors_when_they_disagree(
    conn: asyncpg.Connection,
) -> None:
    """A store from before 0006 (fingerprint set, dimension never recorded): the rows it
    holds decide, so a writer whose model changed under its name cannot claim the store."""
    await insert(conn, vec(8))
    await conn.execute("UPDATE amrita_memory.store_meta SET embed_dim = NULL WHERE id = 1")
    await refused("AMF03", insert(conn, vec(9)))
    assert (await meta(conn))["embed_dim"] is None  # the refusal rolled the recording back
    await insert(conn, vec(8, 2.0))
    assert (await meta(conn))["embed_dim"] == 8
    assert await rows(conn) == 2


# ---------------------------------------------------------------- inserts


async def test_an_insert_with_the_stores_fingerprint_but_another_dimension_is_refused(
    conn: asyncpg.Connection,
) -> None:
    await insert(conn, vec(8))
    error = await refused("AMF03", insert(conn, vec(12)))
    assert "8-dimensional" in str(error) and "12 dimensions" in str(error)
    assert await rows(conn) == 1


async def test_an_insert_from_another_model_is_refused_even_into_a_full_partition(
    conn: asyncpg.Connection,
) -> None:
    await insert(conn, vec(8), cap=1)
    assert (await insert(conn, vec(8), cap=1))["id"] is None  # full, same model: no error
    await refused("AMF01", insert(conn, vec(8), "fp-b", cap=1))
    await refused("AMF01", insert(conn, vec(8), "fp-b", partition="QQPlatform_Group_1"))
    assert await rows(conn) == 1


async def test_an_insert_racing_a_re_embed_switch_is_refused_not_landed_in_the_old_model(
    db_dsn: str,
) -> None:
    """The writer's INSERT waits for the switch's table lock; when the switch commits, the
    writer's model check (made under the lock) sees the new model and refuses: no
    old-model vector lands after the switch."""
    conns = [await asyncpg.connect(db_dsn) for _ in range(3)]
    setup, switch, writer = conns
    try:
        for c in conns:
            await register_vector_codec(c)
        await setup.execute(
            "UPDATE amrita_memory.store_meta SET embed_fingerprint = 'fp-a', embed_dim = 8"
        )
        tx = switch.transaction()
        await tx.start()
        await switch.execute("LOCK TABLE amrita_memory.memory IN SHARE ROW EXCLUSIVE MODE")
        await switch.execute(
            "UPDATE amrita_memory.store_meta SET embed_fingerprint = 'fp-b' WHERE id = 1"
        )
        pid = writer.get_server_pid()
        task = asyncio.ensure_future(insert(writer, vec(8), "fp-a"))
        for _ in range(200):  # until the writer waits on the switch's lock
            waiting = await setup.fetchval(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid
            )
            if waiting:
                break
            await asyncio.sleep(0.02)
        assert waiting
        await tx.commit()
        error = await refused("AMF01", task)
        assert "fp-b" in str(error)
        assert await rows(setup) == 0
    finally:
        for c in conns:
            await c.close()


@pytest.fixture
async def pool(db_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    async with asyncpg.create_pool(
        db_dsn, min_size=20, max_size=20, init=register_vector_codec
    ) as p:
        yield p


async def test_concurrent_writers_never_exceed_the_cap(pool: asyncpg.Pool) -> None:
    """160 concurrent writers into one partition leave exactly 100 rows, and the other
    partitions are not affected."""
    results = await asyncio.gather(
        *(insert(pool, vec(8, i), content=f"并发写入 {i}") for i in range(160))
    )
    written = [r for r in results if r["id"] is not None]
    refusals = [r for r in results if r["id"] is None]
    assert len(written) == 100 and len(refusals) == 60
    assert all(r["rows_before"] == 100 for r in refusals)
    assert sorted(r["rows_before"] for r in written) == list(range(100))
    assert (
        await pool.fetchval("SELECT count(*) FROM amrita_memory.memory WHERE partition_key = $1", P)
        == 100
    )
    assert (await insert(pool, vec(8), partition="QQPlatform_Group_1"))["id"] is not None


# ---------------------------------------------------------------- updates


@pytest.fixture
async def stored(conn: asyncpg.Connection) -> str:
    row = await insert(conn, vec(8))
    return str(row["id"])


async def test_an_update_from_another_model_is_refused_and_the_row_is_unchanged(
    conn: asyncpg.Connection, stored: str
) -> None:
    before = await row_of(conn, stored)
    await refused(
        "AMF01", update(conn, stored, content="新内容", embedding=vec(8, 3.0), fingerprint="fp-b")
    )
    await refused("AMF03", update(conn, stored, content="新内容", embedding=vec(12, 3.0)))
    assert await row_of(conn, stored) == before
    assert (await meta(conn))["embed_dim"] == 8


async def test_an_update_with_the_stores_model_changes_text_vector_and_clock(
    conn: asyncpg.Connection, stored: str
) -> None:
    later = NOW + timedelta(days=2)
    (row,) = await update(
        conn, stored, content="新内容", embedding=vec(8, 3.0), importance=9, now=later
    )
    assert (row["content"], row["importance"], row["created_at"], row["updated_at"]) == (
        "新内容", 9, NOW, later
    )  # fmt: skip
    after = await row_of(conn, stored)
    assert after["embedding"] == "[" + ",".join(["3"] * 8) + "]"
    assert after["tier_since"] == later  # medium → high: a new tier, a new lifetime


async def test_a_metadata_update_needs_no_vector_and_keeps_the_tier_clock_within_a_tier(
    conn: asyncpg.Connection, stored: str
) -> None:
    before = await row_of(conn, stored)
    (row,) = await update(conn, stored, tags=["a", "b"], importance=6, category="rule")
    assert (row["tags"], row["importance"], row["category"]) == (["a", "b"], 6, "rule")
    after = await row_of(conn, stored)
    assert after["embedding"] == before["embedding"]
    assert after["tier_since"] == before["tier_since"]  # 5 → 6 stays medium
    # category is replaced only when asked to (here: set back to NULL explicitly)
    (row,) = await update(conn, stored, category=None)
    assert row["category"] is None
    (row,) = await update(conn, stored, importance=6)
    assert row["tags"] == ["a", "b"]


async def test_an_update_outside_the_partition_changes_nothing(
    conn: asyncpg.Connection, stored: str
) -> None:
    before = await row_of(conn, stored)
    assert await update(conn, stored, partition="QQPlatform_Private_2", importance=1) == []
    assert await update(conn, "0" * 32, importance=1) == []
    assert await row_of(conn, stored) == before


async def test_new_content_without_its_embedding_is_refused(
    conn: asyncpg.Connection, stored: str
) -> None:
    before = await row_of(conn, stored)
    await refused("22023", update(conn, stored, content="只有文字"))
    assert await row_of(conn, stored) == before
