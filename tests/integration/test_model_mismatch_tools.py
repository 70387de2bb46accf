"""The model checks through the chat tools: a process whose embedding model is not the
store's can neither write nor rewrite a memory's vector, on either vector backend, and
the LLM gets a sentence that says why and what fixes it.

Two processes on one store are two ``memory_on`` handles on one database and data
directory: the store's model is whatever wrote first; the other handle is configured with
another model (F1: another fingerprint, same dimension) or with the same model name whose
dimension changed (F2: same fingerprint, the model changed under its pinned name, played
by the stub embedding server changing its dimension between the two starts).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.maintenance.backup import create_backup, read_header
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage import store_meta
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on
from tests.support.vectors import assert_index_in_step

ALICE = ToolContext(platform="qq", user_id="10001")
OLLAMA_MODEL = "nomic-embed-text:latest"


@pytest.fixture(params=["pgvector", "chroma"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def stub() -> Iterator[StubEmbeddingServer]:
    with StubEmbeddingServer(dim=384) as server:
        yield server


def ollama(stub: StubEmbeddingServer) -> dict[str, Any]:
    """Settings overrides of a process embedding with the stub's Ollama endpoint."""
    return {
        "embedding__protocol": "ollama-embed",
        "embedding__model_url": stub.url,
        "embedding__model_name": OLLAMA_MODEL,
        # the process starts anyway, as a bot whose operator chose to keep serving
        "embedding__mismatch_policy": "never",
    }


async def call(mem: Memory, tool: str, **args: Any) -> dict[str, Any]:
    data = json.loads(await mem.call_tool(tool, args, ALICE))
    assert isinstance(data, dict)
    return data


async def write(mem: Memory, content: str) -> str:
    data = await call(
        mem, "write_memory", content=content, tags="t", importance="medium", scope="user"
    )
    assert data["status"] == "success", data
    return str(data["memory_id"])


async def stored_rows(mem: Memory) -> list[dict[str, Any]]:
    rows = await mem.pool.fetch(
        "SELECT id, content, tags, importance, embedding::text AS embedding, embed_fingerprint, "
        "updated_at FROM amrita_memory.memory ORDER BY id"
    )
    return [dict(row.items()) for row in rows]


async def test_f1_an_update_from_another_model_is_refused_and_changes_nothing(
    db_dsn: str, tmp_path: Path, backend: str, stub: StubEmbeddingServer
) -> None:
    async with memory_on(db_dsn, tmp_path, startup=True, vector_backend=backend) as bot:
        memory_id = await write(bot, "我家的猫叫咪咪")
        before = await stored_rows(bot)
    async with memory_on(
        db_dsn, tmp_path, startup=True, vector_backend=backend, **ollama(stub)
    ) as other:
        assert other.embedder.fingerprint != before[0]["embed_fingerprint"]
        data = await call(
            other, "update_memory", id=memory_id, content="我家的猫叫花花", scope="user"
        )
        assert data["status"] == "error", data
        message = data["message"]
        assert message.startswith("更新记忆失败: embedding model mismatch"), message
        assert other.embedder.fingerprint in message
        assert "amrita-memory reindex" in message  # what fixes it
        # Its new vector has the store's dimension: only the fingerprint tells them apart.
        assert other.embedder.dim == 384 == len(stub.vector("x"))
        assert await stored_rows(other) == before
        # A new memory from that process is refused the same way (insert_memory_v2).
        refused = await call(
            other, "write_memory", content="新记忆", tags="t", importance="low", scope="user"
        )
        assert refused["status"] == "error"
        assert refused["message"].startswith("写入记忆失败: embedding model mismatch"), refused
        assert await stored_rows(other) == before
    async with memory_on(db_dsn, tmp_path, startup=True, vector_backend=backend) as bot:
        assert await assert_index_in_step(bot) == {memory_id}
        found = await call(bot, "read_memory", query="猫", scope="user")
        assert found["documents"] == [["我家的猫叫咪咪"]]


async def test_f2_a_model_whose_dimension_changed_under_its_name_cannot_write(
    db_dsn: str, tmp_path: Path, backend: str, stub: StubEmbeddingServer
) -> None:
    stub.dim = 8
    async with memory_on(
        db_dsn, tmp_path, startup=True, vector_backend=backend, **ollama(stub)
    ) as bot:
        # A normal start, then the first write records the store's dimension.
        memory_id = await write(bot, "明天去北京出差")
        meta = await store_meta.read(bot.pool)
        assert (meta.fingerprint, meta.dim) == (bot.embedder.fingerprint, 8)
        backup = await create_backup(bot.store, reason="test")
        assert read_header(backup.jsonl_path)["dim"] == 8
        fingerprint = bot.embedder.fingerprint
        before = await stored_rows(bot)
    stub.dim = 16  # the same model name now answers with 16-dimensional vectors
    async with memory_on(
        db_dsn, tmp_path, startup=True, vector_backend=backend, **ollama(stub)
    ) as changed:
        assert changed.embedder.fingerprint == fingerprint
        data = await call(
            changed, "write_memory", content="后天回上海", tags="t", importance="high", scope="user"
        )
        assert data["status"] == "error", data
        message = data["message"]
        assert message.startswith("写入记忆失败: embedding dimension mismatch"), message
        assert "8-dimensional" in message and "16 dimensions" in message
        assert await stored_rows(changed) == before
        # Updating the content would write a 16-d vector: refused too, row unchanged.
        update = await call(
            changed, "update_memory", id=memory_id, content="后天去北京", scope="user"
        )
        assert update["status"] == "error"
        assert update["message"].startswith("更新记忆失败: embedding dimension mismatch"), update
        # And a search says why instead of failing inside pgvector.
        search = await call(changed, "read_memory", query="北京", scope="user")
        assert search["status"] == "error"
        assert search["message"].startswith("检索记忆失败: "), search
        assert "dimension" in search["message"] and "reindex" in search["message"]
        assert await stored_rows(changed) == before
        assert (await store_meta.read(changed.pool)).dim == 8
        assert await assert_index_in_step(changed) == {memory_id}
