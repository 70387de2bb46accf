"""The operations pages in headless Chromium: knowledge (a suggestion accepted,
one rejected, create with an inline error, edit, delete with confirm), profiles with
history and revert, L3 runs with the next window and the 7 × 12 heatmap, status with a
background job started by the superuser and followed to the end.

Each test checks the database too: accepted writes are in their tables and in
``admin_audit``; refused ones leave both as they were. Screenshots of every page go to
test-artifacts/screenshots/ (ops-*.png).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.profile import ProfileActor, ProfileEdit
from amrita_memory_pg.testing import StubEmbeddingServer
from tests.browser.conftest import (
    SUPER_PASSWORD,
    AdminServer,
    log_in,
    run_admin_server,
    run_sync,
    screenshot,
    web_settings,
)
from tests.support.data import bulk_insert

USER = "QQPlatform_Private_10001"
GROUP = "QQPlatform_Group_777"
#: old low-importance memories the sweep job purges
OLD_ROWS = 250


@pytest.fixture(scope="module")
def server(
    module_db: str, stub_embedder: StubEmbeddingServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdminServer]:
    """An app with L3 on (target 10001), a knowledge entry and two suggestions, a profile
    with history, L3 activity and runs, and old memories for the sweep."""
    settings = web_settings(
        module_db,
        tmp_path_factory.mktemp("ops-data"),
        stub_embedder.url,
        **{
            "subconscious.enabled": True,
            "subconscious.target_user_id": "10001",
            "subconscious.idle_timezone": "Asia/Shanghai",
            "decay.sweep_batch_limit": 100,
            "embedding.reembed_batch_size": 10,
        },
    )

    async def seed() -> None:
        async with open_memory(settings, startup=False) as mem:
            await mem.knowledge.create(
                kid="0000000a", title="咖啡", summary="烘焙与萃取", body="浅烘\n深烘"
            )
            for title, summary in (("猫的饮食", "猫不能吃巧克力"), ("广告", "买买买")):
                await mem.knowledge.suggest(
                    author_id="10001",
                    action="create",
                    title=title,
                    summary=summary,
                    body="- 巧克力\n- 洋葱",
                    reason="群里有人问过",
                )
            chat = ProfileActor(kind="chat", who="10001")
            await mem.profiles.edit(USER, ProfileEdit("爱猫的后端工程师", ("喜欢猫",)), chat)
            await mem.profiles.edit(USER, ProfileEdit("爱猫的后端工程师", ("讨厌下雨",)), chat)
            start = datetime.now(UTC) - timedelta(days=9)
            for day in range(8):
                for minutes in (0, 30, 60):
                    moment = start + timedelta(days=day, minutes=minutes)
                    await mem.scheduling.on_user_message(USER, None, moment)
            runs = mem.consolidation
            cycle = await runs.start_cycle(USER, trigger="scheduled", now=start, dry_run=False)
            await runs.record_usage(
                USER, cycle, purpose="step", model="m", prompt_tokens=1200, completion_tokens=80,
                now=start,
            )  # fmt: skip
            await runs.finish_cycle(
                USER, cycle, now=start + timedelta(minutes=2), ok=True, error=None, iterations=3,
                tool_calls=4, memories_changed=2, summary="合并了两条重复记忆",
            )  # fmt: skip
            failed = await runs.start_cycle(GROUP, trigger="manual", now=start, dry_run=False)
            await runs.finish_cycle(
                GROUP, failed, now=start + timedelta(minutes=1), ok=False, error="LLM timeout",
                iterations=1, tool_calls=0, memories_changed=0, summary=None,
            )  # fmt: skip
            await bulk_insert(
                mem.pool,
                count=OLD_ROWS,
                created_at=datetime.now(UTC) - timedelta(days=400),
                importance=2,
                dim=mem.embedder.dim or 64,
                fingerprint=mem.embedder.fingerprint,
            )

    run_sync(seed())
    with run_admin_server(settings, module_db) as running:
        yield running


def audit_rows(server: AdminServer, action: str) -> list[Any]:
    return server.sql(
        "SELECT actor, role, target_id, detail::text AS detail, ok FROM amrita_memory.admin_audit"
        " WHERE action = $1 ORDER BY id",
        action,
    )


def suggestion_id(server: AdminServer, title: str) -> int:
    rows = server.sql("SELECT id FROM amrita_memory.knowledge_suggestion WHERE title = $1", title)
    return int(rows[0]["id"])


def test_knowledge_suggestion_accepted_and_another_rejected(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.click("a[data-nav=knowledge]")
    page.wait_for_load_state()
    assert page.locator("#kb-entries tr[data-kid='0000000a']").is_visible()
    assert page.locator("#kb-suggestions tbody tr").count() == 2
    screenshot(page, "ops-knowledge")
    accepted = suggestion_id(server, "猫的饮食")
    page.click(f"tr[data-suggestion='{accepted}'] a")
    page.wait_for_load_state()
    assert page.locator("#s-body").inner_text() == "- 巧克力\n- 洋葱"
    screenshot(page, "ops-knowledge-suggestion")
    page.click("#accept")
    page.wait_for_load_state()
    assert "已采纳建议" in page.locator(".done").inner_text()
    rows = server.sql(
        "SELECT kid, summary, body FROM amrita_memory.knowledge WHERE title = '猫的饮食'"
    )
    assert len(rows) == 1 and rows[0]["body"] == "- 巧克力\n- 洋葱"
    status = server.sql(
        "SELECT status FROM amrita_memory.knowledge_suggestion WHERE id = $1", accepted
    )
    assert status[0]["status"] == "done"
    (audit,) = audit_rows(server, "knowledge.suggestion_accept")
    assert audit["target_id"] == str(accepted) and audit["ok"] is True
    assert rows[0]["kid"] in audit["detail"]

    rejected = suggestion_id(server, "广告")
    page.goto(f"{server.url}/knowledge/s/{rejected}")
    page.click("#reject")
    page.wait_for_load_state()
    assert "已拒绝建议" in page.locator(".done").inner_text()
    assert page.locator("#kb-suggestions").count() == 0  # the queue is empty
    assert (
        server.sql("SELECT count(*) AS n FROM amrita_memory.knowledge WHERE title = '广告'")[0]["n"]
        == 0
    )
    # handled: the accept button is gone, a replayed POST is refused and writes nothing
    page.goto(f"{server.url}/knowledge/s/{rejected}")
    assert page.locator("#accept").count() == 0
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    replay = page.request.post(
        f"{server.url}/knowledge/s/{rejected}/accept", form={"csrf": csrf}, max_redirects=0
    )
    assert replay.status == 409
    assert len(audit_rows(server, "knowledge.suggestion_accept")) == 1


def test_knowledge_create_edit_delete_with_inline_errors(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/knowledge/new")
    page.fill("#kb-title", "茶")
    page.fill("#kb-body", "乌龙\n绿茶")
    page.click("#kb-save")  # no summary: refused inline, the typed text kept
    page.wait_for_load_state()
    assert "summary" in page.locator(".error").inner_text()
    assert page.locator("#kb-body").input_value() == "乌龙\n绿茶"
    assert (
        server.sql("SELECT count(*) AS n FROM amrita_memory.knowledge WHERE title = '茶'")[0]["n"]
        == 0
    )
    page.fill("#kb-summary", "茶的种类")
    page.click("#kb-save")
    page.wait_for_load_state()
    assert "已创建知识条目" in page.locator(".done").inner_text()
    assert page.locator("#kb-entry-body li").count() == 2
    screenshot(page, "ops-knowledge-entry")
    kid = server.sql("SELECT kid FROM amrita_memory.knowledge WHERE title = '茶'")[0]["kid"]
    page.click("#kb-edit")
    page.fill("#kb-body", "乌龙\n绿茶\n红茶")
    page.click("#kb-save")
    page.wait_for_load_state()
    assert page.locator("#kb-entry-body li").count() == 3
    page.click("#kb-delete")
    page.wait_for_load_state()
    assert "茶的种类" in page.locator("#doomed").inner_text()
    page.click("#confirm")
    page.wait_for_load_state()
    assert "已删除知识条目" in page.locator(".done").inner_text()
    assert (
        server.sql("SELECT count(*) AS n FROM amrita_memory.knowledge WHERE kid = $1", kid)[0]["n"]
        == 0
    )
    assert [r["ok"] for r in audit_rows(server, "knowledge.delete")] == [True]


def test_profile_history_and_revert(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.click("a[data-nav=profiles]")
    page.wait_for_load_state()
    assert page.locator(f"#profiles tr[data-key='{USER}']").is_visible()
    screenshot(page, "ops-profiles")
    page.click(f"#profiles tr[data-key='{USER}'] a")
    page.wait_for_load_state()
    assert page.locator("#profile-lines li").all_inner_texts() == ["喜欢猫", "讨厌下雨"]
    assert page.locator("#profile-history tbody tr").count() == 2
    page.click("#profile-history tr[data-version='1'] a")
    page.wait_for_load_state()
    assert "v1" in page.locator("#profile-change h2").inner_text()
    page.click("button[data-revert='1']")
    page.wait_for_load_state()
    assert "已恢复到 v1" in page.locator(".done").inner_text()
    assert page.locator("#profile-lines li").all_inner_texts() == ["喜欢猫"]
    # the detail box shows the change the revert made (v3), in words, not v1 and internals
    change = page.locator("#profile-change")
    assert "v3" in change.locator("h2").inner_text()
    meta = change.locator("p.muted").first.inner_text()
    assert "网页上的 tester" in meta and "web:tester" not in meta
    assert "revert to" not in meta and "v1" in meta
    who = page.locator("#profile-history tr[data-version='3'] td").nth(2).inner_text()
    assert who == "网页上的 tester"
    newest = server.sql(
        "SELECT version, actor_kind, actor, operation FROM amrita_memory.profile_history"
        " WHERE partition_key = $1 ORDER BY version DESC LIMIT 1",
        USER,
    )[0]
    assert tuple(newest.values()) == (3, "cli", "web:tester", "revert to v1")
    screenshot(page, "ops-profile")
    # a group has no profile: an inline refusal, nothing opened
    page.goto(f"{server.url}/profiles/open?key={GROUP}")
    assert "不是用户" in page.locator(".error").inner_text()


def test_l3_runs_next_window_and_heatmap(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.click("a[data-nav=l3]")
    page.wait_for_load_state()
    target = page.locator(f"section[data-target='{USER}']")
    assert "下一个计划窗口" in target.locator(".next-window").inner_text()
    assert target.locator(".heatmap .cell").count() == 84
    assert target.locator(".heatmap .cell.heat-4").count() >= 1
    assert target.locator(".heatmap .cell.planned").count() >= 1
    runs = page.locator("#l3-runs tbody tr")
    assert runs.count() == 2
    assert "1200 + 80" in page.locator("#l3-runs").inner_text()
    assert "LLM timeout" in page.locator("#l3-runs tr.failed").inner_text()
    screenshot(page, "ops-l3")
    page.goto(f"{server.url}/l3?target={GROUP}")
    assert page.locator("#l3-runs tbody tr").count() == 1
    page.goto(f"{server.url}/l3?lang=en")
    assert page.locator("h1").inner_text() == "L3 runs"
    assert "Next planned window" in page.locator(".next-window").first.inner_text()
    assert page.locator(".heatmap .day").all_inner_texts()[0] == "Mon"


def test_status_and_a_sweep_job_followed_to_the_end(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)  # an admin sees the status but no job buttons
    page.click("a[data-nav=status]")
    page.wait_for_load_state()
    assert "(最新)" in page.locator("#status-schema").inner_text()
    assert page.locator("#job-sweep").count() == 0
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    refused = page.request.post(
        f"{server.url}/status/jobs/sweep", form={"csrf": csrf}, max_redirects=0
    )
    assert refused.status == 403
    page.context.clear_cookies()
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/status")
    assert "尚未运行" in page.locator("#status-sweep").inner_text()
    screenshot(page, "ops-status")
    page.click("#job-sweep")
    page.wait_for_load_state()
    # asked first, with what it costs; nothing has started yet
    assert f"全部 {OLD_ROWS} 条记忆" in page.locator("#job-cost").inner_text()
    assert server.sql("SELECT count(*) AS n FROM amrita_memory.job")[0]["n"] == 0
    page.click("#confirm")
    page.wait_for_load_state()
    assert "/status/jobs/" in page.url
    page.wait_for_selector("#job[data-state='done']", timeout=15_000)
    assert page.locator("#job-count").inner_text() == f"{OLD_ROWS}/{OLD_ROWS}"
    assert page.locator("#job-percent").inner_text() == "(100%)"
    assert f"清除 {OLD_ROWS} 条" in page.locator("#job-result").inner_text()
    # finished: the state alone, not «完成 · 完成»
    assert page.locator("#job-state").inner_text() == "完成"
    assert page.locator("#job-progress").is_hidden()
    assert page.locator("#job-bar").get_attribute("value") == str(OLD_ROWS)
    screenshot(page, "ops-job")
    assert server.sql("SELECT count(*) AS n FROM amrita_memory.memory")[0]["n"] == 0
    (audit,) = audit_rows(server, "job.sweep")
    assert (audit["actor"], audit["role"], audit["ok"]) == ("root", "superuser", True)
    (end,) = audit_rows(server, "job.sweep.end")  # the outcome, recorded when it ended
    assert end["target_id"] == audit["target_id"] and end["ok"] is True
    assert f"purged {OLD_ROWS}" in end["detail"]
    page.goto(f"{server.url}/status")
    assert "已完成完整轮次：1" in page.locator("#status-sweep").inner_text()
    assert page.locator("#jobs tbody tr").count() == 1
    # the job is a row any process's page reads, naming the process that ran it
    (row,) = server.sql("SELECT id, state, owner, started_by FROM amrita_memory.job")
    assert (row["id"], row["state"], row["started_by"]) == (audit["target_id"], "done", "root")
    assert page.locator("#jobs tbody td.mono.small").first.inner_text() == row["owner"]


def test_a_reembed_job_shows_its_progress_while_it_runs(
    page: Any, server: AdminServer, stub_embedder: StubEmbeddingServer
) -> None:
    """Rows of another model, an embedder answering slowly: the progress view is open
    while the job runs and its script follows it to the end."""
    server.sql(
        "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance,"
        " embedding, embed_fingerprint)"
        " SELECT 'QQPlatform_Private_3', 'user', 'old model ' || g, 5,"
        " (SELECT array_agg(0.1)::real[]::vector FROM generate_series(1, 64) WHERE g > 0), 'old'"
        " FROM generate_series(1, 40) AS g"
    )
    rows = server.sql(
        "SELECT (SELECT count(*) FROM amrita_memory.memory)"
        " + (SELECT count(*) FROM amrita_memory.knowledge) AS n"
    )[0]["n"]
    assert rows == 42  # every memory and knowledge entry is re-embedded
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/status")
    stub_embedder.delay_seconds = 0.3
    try:
        page.click("#job-reembed")
        page.wait_for_load_state()
        assert "42 行" in page.locator("#job-cost").inner_text()  # asked first
        assert "nomic-embed-text" in page.locator("#job-model").inner_text()
        assert "本机" in page.locator("#job-remote").inner_text()  # the stub is on loopback
        page.click("#confirm")
        page.wait_for_load_state()
        assert page.locator("#job").get_attribute("data-state") == "running"
        page.wait_for_selector("#job[data-state='done']", timeout=20_000)
    finally:
        stub_embedder.delay_seconds = 0.0
    assert page.locator("#job-count").inner_text() == "42/42"  # updated by the script
    assert page.locator("#job-state").inner_text() == "完成"
    assert "重新嵌入 42 行" in page.locator("#job-result").inner_text()
    screenshot(page, "ops-job-reembed")
    left = server.sql(
        "SELECT count(*) AS n FROM amrita_memory.memory WHERE embed_fingerprint = 'old'"
    )
    assert left[0]["n"] == 0
    page.goto(f"{server.url}/status")
    assert "一致" in page.locator("#status-model-state").inner_text()
    assert page.locator("#backups tbody tr").count() == 1  # taken before the re-embed


def test_a_backup_job_names_the_tables_it_saved_in_words(page: Any, server: AdminServer) -> None:
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/status?lang=zh")
    page.click("#job-backup")
    page.wait_for_load_state()
    if page.locator("#confirm").count():
        page.click("#confirm")
        page.wait_for_load_state()
    page.wait_for_selector("#job[data-state='done']", timeout=60_000)
    result = page.locator("#job-result").inner_text()
    assert result.startswith("amrita_memory_") and "记忆 " in result and "审计日志 " in result
    for table in ("permission_grant", "memory_change", "admin_audit", "memo "):
        assert table not in result
    assert " 0，" not in result and not result.endswith(" 0）")  # empty tables left out
