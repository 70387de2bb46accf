"""A failing embedding server: the tools answer with a clear error and write nothing."""

from __future__ import annotations

import json
from pathlib import Path

from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on

ALICE = ToolContext(platform="qq", user_id="10001")


async def test_write_and_read_fail_cleanly_when_the_embedder_is_down(
    db_dsn: str, tmp_path: Path
) -> None:
    with StubEmbeddingServer(dim=64, fail_always=500) as server:
        async with memory_on(
            db_dsn,
            tmp_path,
            embedding__protocol="ollama-embed",
            embedding__model_url=server.url,
            embedding__model_name="bge-m3",
            embedding__max_retries=1,
        ) as mem:
            reply = json.loads(
                await mem.call_tool(
                    "write_memory",
                    {"content": "喜欢猫", "tags": "pet", "importance": "high", "scope": "user"},
                    ALICE,
                )
            )
            assert reply["status"] == "error"
            assert reply["message"].startswith("写入记忆失败: ")
            assert "HTTP 500" in reply["message"] and server.url in reply["message"]
            assert "after 2 attempts" in reply["message"]
            assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0
            assert (
                await mem.pool.fetchval("SELECT embed_fingerprint FROM amrita_memory.store_meta")
                is None
            )

            read = json.loads(
                await mem.call_tool("read_memory", {"query": "猫", "scope": "user"}, ALICE)
            )
            assert read["status"] == "error" and read["message"].startswith("检索记忆失败: ")


async def test_a_slow_embedder_times_out_without_writing(db_dsn: str, tmp_path: Path) -> None:
    with StubEmbeddingServer(dim=64, delay_seconds=2.0) as server:
        async with memory_on(
            db_dsn,
            tmp_path,
            embedding__protocol="openai",
            embedding__model_url=server.url + "/v1",
            embedding__model_name="text-embedding-3-small",
            embedding__timeout_seconds=0.3,
            embedding__max_retries=0,
        ) as mem:
            reply = json.loads(
                await mem.call_tool(
                    "write_memory",
                    {"content": "x", "tags": "t", "importance": "low", "scope": "user"},
                    ALICE,
                )
            )
            assert reply["status"] == "error" and "写入记忆失败" in reply["message"]
            assert await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0


async def test_credentials_in_the_embedding_url_never_reach_a_tool_reply(
    db_dsn: str, tmp_path: Path
) -> None:
    """EMBEDDING_MODEL_URL with userinfo and a failing (then a changed) model: F3."""
    with StubEmbeddingServer(dim=64) as server:
        url = server.url.replace("http://", "http://embeduser:emb3d-pa55w0rd@")
        async with memory_on(
            db_dsn,
            tmp_path,
            embedding__protocol="ollama-embed",
            embedding__model_url=url,
            embedding__model_name="bge-m3",
            embedding__max_retries=1,
        ) as mem:
            wrote = json.loads(
                await mem.call_tool(
                    "write_memory",
                    {"content": "喜欢猫", "tags": "pet", "importance": "high", "scope": "user"},
                    ALICE,
                )
            )
            assert wrote["status"] == "success"

            server.fail_always = 500  # the HTTP error path
            failed = await mem.call_tool("read_memory", {"query": "猫", "scope": "user"}, ALICE)
            server.fail_always = None
            server.dim = 128  # the describe() path: the model changed under us
            changed = await mem.call_tool("read_memory", {"query": "狗", "scope": "user"}, ALICE)

    for raw in (failed, changed):
        reply = json.loads(raw)
        assert reply["status"] == "error" and reply["message"].startswith("检索记忆失败: ")
        assert "emb3d-pa55w0rd" not in raw and "embeduser" not in raw
        assert "http://***@127.0.0.1:" in reply["message"]
    assert "HTTP 500 after 2 attempts" in json.loads(failed)["message"]
    assert "ollama-embed / bge-m3 @ http://***@" in json.loads(changed)["message"]
    assert "dimension 128, expected 64" in json.loads(changed)["message"]
