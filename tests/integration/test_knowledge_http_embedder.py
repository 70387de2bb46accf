"""The knowledge base over a real HTTP embedder (the local stub): the summary is what is
sent, and an outage is a clear error that writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.tools.context import CycleContext, ToolContext
from tests.support.memory import memory_on
from tests.support.vectors import as_stored

SNAPSHOT = (
    "SELECT kid, title, summary, body, embedding::text, updated_at FROM amrita_memory.knowledge"
)
SUPER = ToolContext(platform="qq", user_id="1", roles=frozenset({"superuser"}))
LOOP = ToolContext(
    platform="qq", user_id="1", cycle=CycleContext(cycle_id=1, target_key="QQPlatform_Private_1")
)


async def test_knowledge_over_http_and_through_an_outage(db_dsn: str, tmp_path: Path) -> None:
    with StubEmbeddingServer(dim=64) as server:
        async with memory_on(
            db_dsn,
            tmp_path,
            subconscious__enabled=True,
            embedding__protocol="ollama-embed",
            embedding__model_url=server.url,
            embedding__model_name="bge-m3",
            embedding__max_retries=0,
        ) as mem:
            loop = mem.registries["consolidation"]
            created = json.loads(
                await loop.call(
                    "subconscious_knowledge_create",
                    {"title": "猫的饮食", "summary": "猫不能吃巧克力", "body": "正文"},
                    LOOP,
                )
            )
            kid = created["kid"]
            stored = await mem.pool.fetchval(
                "SELECT embedding FROM amrita_memory.knowledge WHERE kid = $1", kid
            )
            assert np.allclose(stored, as_stored(server.vector("猫不能吃巧克力")), atol=1e-6)
            found = json.loads(
                await mem.call_tool("knowledge_search", {"query": "猫不能吃巧克力"}, SUPER)
            )
            assert found["items"][0]["kid"] == kid

            server.fail_always = 500
            before = [tuple(r.values()) for r in await mem.pool.fetch(SNAPSHOT)]
            search = json.loads(await mem.call_tool("knowledge_search", {"query": "猫"}, SUPER))
            # an error envelope, not the reference's success with an "error" item
            assert search["status"] == "error"
            assert (
                search["message"].startswith("检索知识库失败: ") and "HTTP 500" in search["message"]
            )
            for name, args in [
                ("subconscious_knowledge_create", {"title": "t", "summary": "s", "body": ""}),
                ("subconscious_knowledge_update", {"kid": kid, "summary": "新摘要"}),
            ]:
                reply = json.loads(await loop.call(name, args, LOOP))
                assert reply["status"] == "error" and "HTTP 500" in reply["message"], name
            # what needs no embedding still works: reads, a title edit, suggestions
            assert json.loads(await mem.call_tool("knowledge_list", {}, SUPER))["total"] == 1
            assert [tuple(r.values()) for r in await mem.pool.fetch(SNAPSHOT)] == before
            edited = json.loads(
                await loop.call(
                    "subconscious_knowledge_update", {"kid": kid, "title": "新标题"}, LOOP
                )
            )
            assert edited["status"] == "success"
            # keyword mode embeds nothing: it finds the entry (by its new title) during the
            # outage, without one request to the embedder
            asked = len(server.embedding_requests)
            by_word = json.loads(
                await mem.call_tool(
                    "knowledge_search", {"query": "新标题", "mode": "keyword"}, SUPER
                )
            )
            assert by_word["status"] == "success" and by_word["items"][0]["kid"] == kid
            assert by_word["items"][0]["distance"] is None
            assert len(server.embedding_requests) == asked
