"""The admin page on the bot's own FastAPI driver: mounted under [web] path
when enabled, reading the plugin's open memory; login and a page over HTTP."""

from __future__ import annotations

import re

import httpx
import nonebot

from tests.nonebot.conftest import ADMIN_PASSWORD


async def test_the_admin_page_is_mounted_on_the_driver() -> None:
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import admin_mounted, runtime

    assert admin_mounted
    memory = runtime.require()
    await memory.memos.replace("QQPlatform_Private_42", "称呼：阿四")
    transport = httpx.ASGITransport(app=nonebot.get_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://bot") as client:
        refused = await client.get("/memory-admin/partitions")
        assert refused.status_code == 303
        assert refused.headers["location"].startswith("/memory-admin/login?next=")
        form = await client.get("/memory-admin/login")
        assert form.status_code == 200
        token = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert token is not None
        wrong = await client.post(
            "/memory-admin/login", data={"password": "nope", "csrf": token.group(1)}
        )
        assert wrong.status_code == 401
        ok = await client.post(
            "/memory-admin/login",
            data={"password": ADMIN_PASSWORD, "csrf": token.group(1), "name": "bot-admin"},
        )
        assert ok.status_code == 303
        page = await client.get("/memory-admin/partitions")
        assert page.status_code == 200
        assert "QQPlatform_Private_42" in page.text
        memo = await client.get("/memory-admin/p/QQPlatform_Private_42/memo")
        assert "称呼：阿四" in memo.text


async def test_the_bot_watches_for_a_lost_reembed_from_its_start() -> None:
    """The page's job runner is made at the bot's start and looks for a lost re-embed
    to resume, before anyone opens the page."""
    from starlette.routing import Mount

    from amrita_memory_pg.web.jobs import JobRunner

    (mount,) = [r for r in nonebot.get_app().routes if isinstance(r, Mount)]
    runner = getattr(mount.app.state, "webops_jobs", None)
    assert isinstance(runner, JobRunner)
    assert runner._watcher is not None and not runner._watcher.done()
    assert await runner.resume_lost() == []  # the store is open; nothing was lost


async def test_metrics_and_health_are_served_on_the_driver_without_a_login() -> None:
    """A fleet's Prometheus scrapes each bot process at /metrics; an orchestrator's HTTP
    probe calls /health ([observability], on whether or not the admin page is)."""
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import (
        observability_mounted,
        runtime,
    )
    from amrita_memory_pg.tools.context import ToolContext

    assert observability_mounted
    memory = runtime.require()
    ctx = ToolContext(platform="qq", user_id="4242")
    await memory.call_tool("read_memory", {"query": "x", "scope": "user"}, ctx)
    transport = httpx.ASGITransport(app=nonebot.get_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://bot") as client:
        scraped = await client.get("/metrics")
        health = await client.get("/health")
    assert scraped.status_code == 200
    assert (
        'amrita_memory_tool_calls_total{audience="chat",status="success",tool="read_memory"}'
        in (scraped.text)
    )
    assert "4242" not in scraped.text
    assert health.status_code == 200, health.text
    assert health.json()["status"] == "ok"
