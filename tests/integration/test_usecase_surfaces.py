"""Every surface calls the same use cases, and each maps their errors
once at its edge: the knowledge reader check lives in ``KnowledgeCases`` (the chat tools
and ``/memory`` refuse with its sentence), and the admin page turns a full partition into
its form line through ``kit.refusal_line`` (audited as refused, nothing written)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply
from amrita_memory_pg.services.knowledge import DISABLED, NO_PERMISSION
from amrita_memory_pg.tools.context import ToolContext
from amrita_memory_pg.usecases.values import Refusal
from amrita_memory_pg.web import create_admin_app
from amrita_memory_pg.web.security import hash_password
from tests.support.memory import memory_on

SUPER = "usecase-super-pass"


async def test_the_knowledge_reader_check_is_the_use_cases_for_tools_and_command(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, subconscious__enable_knowledge=True) as mem:
        cases = mem.cases.knowledge
        with pytest.raises(Refusal) as refused:
            await cases.check_reader("20001", frozenset(), in_group=False)
        assert str(refused.value) == NO_PERMISSION
        await cases.check_reader("20001", frozenset({"superuser"}), in_group=False)
        assert await cases.grant("20001", "memory.knowledge", by="test")
        await cases.check_reader("20001", frozenset(), in_group=False)  # granted now
        # /memory answers the use case's sentence, not a failure of its own
        command = MemoryCommand.over(mem)
        stranger = ToolContext(platform="QQPlatform", user_id="20002")
        assert await command.run(stranger, "knowledge list") == TextReply(NO_PERMISSION)
        # the chat tool refuses with the same sentence
        reply = await mem.call_tool("knowledge_list", "{}", stranger)
        assert NO_PERMISSION in reply
    async with memory_on(db_dsn, tmp_path, subconscious__enable_knowledge=False) as mem:
        with pytest.raises(Refusal) as refused:
            await mem.cases.knowledge.check_reader("1", frozenset({"superuser"}), in_group=False)
        assert str(refused.value) == DISABLED
        with pytest.raises(Refusal) as refused:  # a refused reader learns nothing else
            await mem.cases.knowledge.check_reader("20002", frozenset(), in_group=False)
        assert str(refused.value) == NO_PERMISSION


async def test_a_full_partition_on_the_admin_page_is_the_forms_line_audited_as_refused(
    db_dsn: str, tmp_path: Path
) -> None:
    overrides = {
        "web__password_hash": hash_password("usecase-admin-pass"),
        "web__superuser_password_hash": hash_password(SUPER),
        "per_session_memory_limit": 1,
    }
    async with memory_on(db_dsn, tmp_path, **overrides) as mem:
        await mem.memories.add(partition_key="global", scope="global", content="first")
        app = create_admin_app(mem, mem.settings)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://admin") as client:

            async def csrf(path: str) -> str:
                found = re.search(r'name="csrf" value="([^"]+)"', (await client.get(path)).text)
                assert found is not None
                return found.group(1)

            token = await csrf("/login")
            data = {"password": SUPER, "csrf": token, "name": "carol"}
            assert (await client.post("/login", data=data)).status_code == 303
            token = await csrf("/partitions")
            response = await client.post(
                "/p/global/memories/new",
                data={"csrf": token, "content": "second", "importance": "5"},
            )
        assert response.status_code == 409
        assert (
            "分区已满（上限 1 条）" in response.text or "partition is full (cap 1)" in response.text
        )
        assert await mem.memories.count("global") == 1
        row = await mem.pool.fetchrow(
            "SELECT actor, ok, detail FROM amrita_memory.admin_audit WHERE action = 'memory.add'"
        )
        assert row is not None and row["actor"] == "carol" and row["ok"] is False
