"""The memory's trail on the admin page in headless Chromium: a
memory's change history and access log, pausing a partition (superuser, CSRF, audited),
and the "what the bot sees" inspector. Each test checks the database too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.tools.context import ToolContext
from tests.browser.conftest import (
    SUPER_PASSWORD,
    AdminServer,
    log_in,
    run_admin_server,
    run_sync,
    screenshot,
    web_settings,
)

ALICE = ToolContext(platform="qq", user_id="10001")
KEY = ALICE.personal_key


@pytest.fixture(scope="module")
def admin_server(
    module_db: str, stub_embedder: StubEmbeddingServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdminServer]:
    """This module's app, with the "## Bot Memories" injection on (the inspector shows it)."""
    settings = web_settings(
        module_db,
        tmp_path_factory.mktemp("trail-data"),
        stub_embedder.url,
        **{"injection.enabled": True},
    )
    with run_admin_server(settings, module_db) as server:
        yield server


@pytest.fixture(scope="module")
def server(admin_server: AdminServer) -> AdminServer:
    """A memory a person added and the chat LLM then changed and recalled."""

    async def seed() -> None:
        async with open_memory(admin_server.settings, startup=False) as mem:
            with acting(Actor("person", "cli:ops")):
                record = await mem.memories.add(
                    partition_key=KEY, scope="user", content="用户喜欢乌龙茶", importance=6
                )
            await mem.call_tool(
                "update_memory", {"id": record.id, "tags": "drink", "scope": "user"}, ALICE
            )
            reply = json.loads(
                await mem.call_tool("read_memory", {"query": "乌龙茶", "scope": "user"}, ALICE)
            )
            assert reply["ids"] == [[record.id]]

    run_sync(seed())
    return admin_server


def memory_id(server: AdminServer) -> str:
    (row,) = server.sql("SELECT id FROM amrita_memory.memory WHERE partition_key = $1", KEY)
    return str(row["id"])


def test_a_memorys_trail_shows_who_changed_and_who_recalled_it(
    page: Any, server: AdminServer
) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{KEY}/memories")
    page.click(f"tr[data-id='{memory_id(server)}'] a.trail")
    history = page.locator("#history tbody tr")
    assert [history.nth(i).get_attribute("data-actor") for i in range(2)] == ["llm", "person"]
    # the person in words (it showed the raw «cli:ops»)
    assert "命令行的 ops" in history.nth(1).inner_text()
    assert "cli:ops" not in history.nth(1).inner_text()
    (access,) = page.locator("#accesses tbody tr").all()
    assert access.get_attribute("data-surface") == "tool" and "乌龙茶" in access.inner_text()
    screenshot(page, "memory-trail")
    # an edit on the page is recorded as this person's
    page.goto(f"{server.url}/p/{KEY}/memories/{memory_id(server)}/edit")
    page.fill("#content", "用户喜欢乌龙茶，少冰")
    page.click("#save")
    page.wait_for_load_state()
    rows = server.sql(
        "SELECT actor_kind, actor_id, op FROM amrita_memory.memory_change "
        "WHERE memory_id = $1 ORDER BY seq DESC LIMIT 1",
        memory_id(server),
    )
    assert tuple(rows[0].values()) == ("person", "web:tester", "update")


def test_pausing_a_partition_is_a_superuser_write_with_csrf_and_audited(
    page: Any, server: AdminServer
) -> None:
    log_in(page, server.url)  # an admin: sees the list, no form, and a POST is refused
    page.goto(f"{server.url}/paused")
    assert page.locator("#none-paused").is_visible() and page.locator("#pause-form").count() == 0
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    refused = page.request.post(f"{server.url}/p/{KEY}/pause", form={"csrf": token})
    assert refused.status == 403

    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/paused")
    missing = page.request.post(f"{server.url}/p/{KEY}/pause", form={})
    assert missing.status == 403
    assert server.sql("SELECT 1 FROM amrita_memory.paused_partition") == []
    page.fill("#pause-key", KEY)
    page.fill("#pause-reason", "排查问题")
    page.click("#pause-submit")
    page.wait_for_load_state()
    assert KEY in page.locator(".done").inner_text()
    assert "排查问题" in page.locator(f"tr[data-key='{KEY}']").inner_text()
    (state,) = server.sql("SELECT paused_by, reason FROM amrita_memory.paused_partition")
    assert tuple(state.values()) == ("person:web:root", "排查问题")
    screenshot(page, "paused-scopes")
    page.click(f"tr[data-key='{KEY}'] button.resume")
    page.wait_for_load_state()
    assert page.locator("#none-paused").is_visible()
    actions = server.sql(
        "SELECT action, actor, partition_key, ok FROM amrita_memory.admin_audit "
        "WHERE action LIKE 'partition.%' ORDER BY id"
    )
    assert [tuple(r.values()) for r in actions] == [
        ("partition.pause", "root", KEY, True),
        ("partition.resume", "root", KEY, True),
    ]


def test_the_inspector_shows_the_block_of_the_next_turn_with_token_counts(
    page: Any, server: AdminServer
) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/inspector")
    page.fill("#chat", "not a key")
    page.click("#inspect")
    page.wait_for_load_state()
    assert page.locator(".error").count() == 1 and page.locator("#inspection").count() == 0
    page.fill("#chat", KEY)
    page.click("#inspect")
    page.wait_for_load_state()
    text = page.locator("#block-text").inner_text()
    assert "## Bot Memories" in text and "用户喜欢乌龙茶" in text
    (row,) = page.locator("#injected tbody tr").all()
    assert row.get_attribute("data-id") == memory_id(server)
    assert int(row.locator("td.num").inner_text()) > 0
    screenshot(page, "inspector")
    # looking is not a recall: the access log holds only the seeded read
    assert server.sql("SELECT surface FROM amrita_memory.memory_access ORDER BY seq") == server.sql(
        "SELECT 'tool'::text AS surface"
    )


def test_an_imported_memory_over_the_cap_stays_editable(page: Any, server: AdminServer) -> None:
    """An old install's 4,500-character memory came in as it was; the
    edit page saves its importance (text sent back unchanged), and a changed text is
    still held to the cap."""
    long_text = "很长的旧记忆。" * 643  # 4,501 characters
    assert len(long_text) > 4000

    async def seed() -> str:
        async with open_memory(server.settings, startup=False) as mem:
            record = await mem.memories.add(partition_key=KEY, scope="user", content="旧记忆")
            await mem.pool.execute(
                "UPDATE amrita_memory.memory SET content = $1 WHERE id = $2", long_text, record.id
            )
            return record.id

    long_id = run_sync(seed())
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{KEY}/memories/{long_id}/edit")
    page.fill("#importance", "9")
    page.click("#save")
    page.wait_for_load_state()
    assert page.locator("p.error").count() == 0
    (row,) = server.sql(
        "SELECT importance, content FROM amrita_memory.memory WHERE id = $1", long_id
    )
    assert (row["importance"], row["content"]) == (9, long_text)
    # a changed text over the cap is refused, nothing written
    page.goto(f"{server.url}/p/{KEY}/memories/{long_id}/edit")
    page.fill("#content", long_text + "再加一句")
    page.fill("#importance", "3")
    page.click("#save")
    page.wait_for_load_state()
    assert page.locator("p.error").count() == 1
    (row,) = server.sql("SELECT importance FROM amrita_memory.memory WHERE id = $1", long_id)
    assert row["importance"] == 9
