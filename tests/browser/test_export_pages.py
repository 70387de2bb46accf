"""Export of a partition, the backups list (download, restore) and editing a profile in
place, in headless Chromium.

Each test checks the files and the database too: the export holds exactly its
partition's rows, a downloaded backup is byte for byte the file, a restore asks before
it replaces anything and brings a deleted memory back, a profile edit is a new version
in the history that a revert undoes; refusals (an admin on the backups, a backup name
that is a path, a stale edit) change nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.profile import ProfileActor, ProfileEdit
from amrita_memory_pg.maintenance.backup import BackupInfo, create_backup
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

USER = "QQPlatform_Private_20001"
GROUP = "QQPlatform_Group_20002"


@pytest.fixture(scope="module")
def server(
    module_db: str, stub_embedder: StubEmbeddingServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdminServer]:
    """A user with three memories, a memo and a profile; a group with two memories."""
    settings = web_settings(module_db, tmp_path_factory.mktemp("export-data"), stub_embedder.url)

    async def seed() -> None:
        async with open_memory(settings, startup=False) as mem:
            for n in range(3):
                await mem.memories.add(
                    partition_key=USER, scope="user", content=f"喜欢猫 {n}", importance=5
                )
            for n in range(2):
                await mem.memories.add(
                    partition_key=GROUP, scope="group", content=f"群规 {n}", importance=5
                )
            await mem.memos.replace(USER, "称呼：小李")
            chat = ProfileActor(kind="chat", who="20001")
            await mem.profiles.edit(USER, ProfileEdit("爱猫的学生", ("喜欢猫",)), chat)

    run_sync(seed())
    with run_admin_server(settings, module_db) as running:
        yield running


def audit_rows(server: AdminServer, action: str) -> list[Any]:
    return server.sql(
        "SELECT actor, role, ok, partition_key, target_id, detail::text AS detail"
        " FROM amrita_memory.admin_audit WHERE action = $1 ORDER BY id",
        action,
    )


def make_backup(server: AdminServer) -> BackupInfo:
    async def run() -> BackupInfo:
        async with open_memory(server.settings, startup=False) as mem:
            return await create_backup(mem.store, reason="manual")

    return run_sync(run())


def download(page: Any, selector: str) -> tuple[str, bytes]:
    """Click a download link; (the offered file name, the bytes received)."""
    with page.expect_download() as event:
        page.click(selector)
    got = event.value
    return got.suggested_filename, Path(got.path()).read_bytes()


def test_export_downloads_jsonl_of_exactly_that_partition(page: Any, server: AdminServer) -> None:
    # an admin who is not the superuser gets neither the link nor the file
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{USER}/memories")
    assert page.locator("#export-partition").count() == 0
    assert page.request.get(f"{server.url}/p/{USER}/export.jsonl").status == 403
    page.context.clear_cookies()
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/p/{USER}/memories")
    name, body = download(page, "#export-partition")
    assert name.startswith(USER) and name.endswith(".jsonl")
    lines = [json.loads(line) for line in body.decode("utf-8").splitlines()]
    header, rows = lines[0], lines[1:]
    assert header["format"] == "amrita_memory_pg.partition_export"
    assert header["partition_key"] == USER
    assert header["counts"] == {"memory": 3, "memo": 1, "profile": 1, "profile_history": 1}
    ids = {str(r["id"]) for r in server.sql(
        "SELECT id FROM amrita_memory.memory WHERE partition_key = $1", USER
    )}  # fmt: skip
    memories = [r for r in rows if r["type"] == "memory"]
    assert {m["id"] for m in memories} == ids
    assert {m["content"] for m in memories} == {"喜欢猫 0", "喜欢猫 1", "喜欢猫 2"}
    # the backup's record format: every column, the vector as base64 float32
    assert all(m["embedding_f32le"] and m["embed_fingerprint"] for m in memories)
    assert [r["content"] for r in rows if r["type"] == "memo"] == ["称呼：小李"]
    assert [r["lines"] for r in rows if r["type"] == "profile"] == [["喜欢猫"]]
    assert {r["partition_key"] for r in rows} == {USER}
    assert GROUP not in body.decode("utf-8")
    (audit,) = audit_rows(server, "partition.export")
    assert (audit["actor"], audit["partition_key"], audit["ok"]) == ("root", USER, True)
    # a key that is no partition key: refused, nothing exported
    missing = page.request.get(f"{server.url}/p/not%20a%20key/export.jsonl")
    assert missing.status == 404
    assert len(audit_rows(server, "partition.export")) == 1


def test_backups_list_download_and_restore_asked_first(page: Any, server: AdminServer) -> None:
    info = make_backup(server)
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.click("a[data-nav=backups]")
    page.wait_for_load_state()
    row = page.locator(f"#backup-list tr[data-stem='{info.stem}']")
    assert row.is_visible()
    screenshot(page, "export-backups")
    name, body = download(page, f"#backup-list tr[data-stem='{info.stem}'] a.download-jsonl")
    assert name == f"{info.stem}.jsonl"
    assert body == info.jsonl_path.read_bytes()
    name, body = download(page, f"#backup-list tr[data-stem='{info.stem}'] a.download-dump")
    assert body == info.dump_path.read_bytes()
    assert [r["target_id"] for r in audit_rows(server, "backup.download")] == [info.stem] * 2

    (gone,) = server.sql(
        "DELETE FROM amrita_memory.memory WHERE id = (SELECT min(id) FROM amrita_memory.memory"
        " WHERE partition_key = $1) RETURNING id, content",
        USER,
    )
    row.locator("a.restore").click()
    page.wait_for_load_state()
    # asked first: what it replaces, counted from the file; nothing restored yet
    counts = page.locator("#restore-counts tr[data-kind='memory']")
    assert counts.locator(".in-backup").inner_text() == str(info.counts["memory"])
    assert counts.locator(".in-store").inner_text() == str(info.counts["memory"] - 1)
    screenshot(page, "export-restore-confirm")
    assert not server.sql("SELECT 1 FROM amrita_memory.memory WHERE id = $1", gone["id"])
    assert server.sql("SELECT count(*) AS n FROM amrita_memory.job")[0]["n"] == 0
    page.click("#confirm")
    page.wait_for_load_state()
    assert "/status/jobs/" in page.url
    page.wait_for_selector("#job[data-state='done']", timeout=60_000)
    assert info.stem in page.locator("#job-result").inner_text()
    # a restore counts no rows as it goes: no «0/0 (100%)», no «完成 · 完成»
    assert page.locator("#job-counts").is_hidden() and page.locator("#job-progress").is_hidden()
    (back,) = server.sql("SELECT content FROM amrita_memory.memory WHERE id = $1", gone["id"])
    assert back["content"] == gone["content"]
    (job,) = server.sql("SELECT id, kind, state, started_by FROM amrita_memory.job")
    assert (job["kind"], job["state"], job["started_by"]) == ("restore", "done", "root")
    deadline = time.monotonic() + 10
    while not audit_rows(server, "job.restore.end") and time.monotonic() < deadline:
        time.sleep(0.1)  # the job's end is audited right after its row says done
    (end,) = audit_rows(server, "job.restore.end")
    assert (end["actor"], end["target_id"], end["ok"]) == ("root", job["id"], True)
    assert info.stem in end["detail"]
    # a safety backup of the store as it was came first, listed now
    page.goto(f"{server.url}/backups")
    assert page.locator("#backup-list tbody tr").count() == 2
    assert "before-restore" in page.locator("#backup-list").inner_text()


def test_backups_refused_to_an_admin_and_to_a_path(page: Any, server: AdminServer) -> None:
    info = make_backup(server)
    log_in(page, server.url)
    assert page.locator("a[data-nav=backups]").count() == 0
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    for url in ("/backups", f"/backups/{info.stem}.jsonl", f"/backups/{info.stem}/restore"):
        assert page.request.get(f"{server.url}{url}").status == 403, url
    refused = page.request.post(
        f"{server.url}/backups/{info.stem}/restore",
        form={"csrf": csrf or "", "confirm": "yes"},
        max_redirects=0,
    )
    assert refused.status == 403
    page.context.clear_cookies()
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    secret = info.directory.parent / "secret.jsonl"
    secret.write_text("{}\n")
    for name in ("..%2Fsecret", "..%2F..%2Fetc%2Fpasswd", "amrita_memory_x", info.stem + "x"):
        response = page.request.get(f"{server.url}/backups/{name}.jsonl")
        assert response.status == 404, name
        assert b"{}" not in response.body()
    # a restore POST without confirm only asks
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    asked = page.request.post(
        f"{server.url}/backups/{info.stem}/restore", form={"csrf": csrf or ""}, max_redirects=0
    )
    assert asked.status == 200 and b"confirm-restore" in asked.body()


def test_profile_edit_saves_keeps_history_and_reverts(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/profiles/u/{USER}")
    (before,) = server.sql(
        "SELECT version, summary, lines FROM amrita_memory.profile WHERE partition_key = $1", USER
    )
    assert page.locator("#edit-summary").input_value() == before["summary"]
    assert page.locator("#edit-lines").input_value() == "\n".join(before["lines"])
    page.fill("#edit-summary", "爱猫也爱狗的学生")
    page.fill("#edit-lines", "喜欢猫\n喜欢狗\n")
    page.click("#profile-save")
    page.wait_for_load_state()
    assert "已保存" in page.locator(".done").inner_text()
    page.reload()
    assert page.locator("#profile-summary").inner_text() == "爱猫也爱狗的学生"
    assert page.locator("#profile-lines li").all_inner_texts() == ["喜欢猫", "喜欢狗"]
    new = before["version"] + 1
    (change,) = server.sql(
        "SELECT actor_kind, actor, old_summary, old_lines, new_lines"
        " FROM amrita_memory.profile_history WHERE partition_key = $1 AND version = $2",
        USER,
        new,
    )
    assert (change["actor_kind"], change["actor"]) == ("cli", "web:tester")
    assert (change["old_summary"], list(change["old_lines"])) == (before["summary"], ["喜欢猫"])
    assert list(change["new_lines"]) == ["喜欢猫", "喜欢狗"]
    (audit,) = audit_rows(server, "profile.edit")
    assert audit["ok"] and audit["partition_key"] == USER
    screenshot(page, "export-profile-edited")

    # a form opened before that save (an old version) is refused: nothing written
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    stale = page.request.post(
        f"{server.url}/profiles/u/{USER}/edit",
        form={
            "csrf": csrf or "",
            "summary": "旧页面",
            "lines": "",
            "version": str(before["version"]),
        },
        max_redirects=0,
    )
    assert stale.status == 400 and "重新加载" in stale.text()
    # an empty summary: an inline error, the typed body kept
    page.fill("#edit-summary", "  ")
    page.fill("#edit-lines", "只有正文")
    page.click("#profile-save")
    page.wait_for_load_state()
    assert "摘要：不能为空" in page.locator(".error").inner_text()
    assert page.locator("#edit-lines").input_value() == "只有正文"
    (now,) = server.sql(
        "SELECT version, summary FROM amrita_memory.profile WHERE partition_key = $1", USER
    )
    assert (now["version"], now["summary"]) == (new, "爱猫也爱狗的学生")

    # the previous version is in the history and a revert brings it back
    page.goto(f"{server.url}/profiles/u/{USER}")
    page.click(f"button[data-revert='{before['version']}']")
    page.wait_for_load_state()
    assert page.locator("#profile-summary").inner_text() == before["summary"]
    assert page.locator("#profile-lines li").all_inner_texts() == ["喜欢猫"]
    assert page.locator("#edit-summary").input_value() == before["summary"]


def test_a_restore_waits_for_a_sweep_elsewhere_in_the_fleet(page: Any, server: AdminServer) -> None:
    """A sweep another process runs (its lease) rewrites the rows a restore replaces: the
    restore job ends failed, naming it, and the store is as it was."""
    info = make_backup(server)
    server.sql(
        "INSERT INTO amrita_memory.lease (kind, lease_key, owner, token, acquired_at,"
        " renewed_at, expires_at) VALUES ('sweep', '', 'other-host:4242:20260101T000000Z',"
        " 't', now(), now(), now() + interval '5 minutes')"
    )
    server.sql("DELETE FROM amrita_memory.memory WHERE partition_key = $1", GROUP)
    try:
        log_in(page, server.url, password=SUPER_PASSWORD, name="root")
        page.goto(f"{server.url}/backups/{info.stem}/restore")
        page.click("#confirm")
        page.wait_for_load_state()
        page.wait_for_selector("#job[data-state='failed']", timeout=30_000)
        error = page.locator("#job-error").inner_text()
        assert "sweep" in error and "other-host:4242" in error
    finally:
        server.sql("DELETE FROM amrita_memory.lease WHERE kind = 'sweep'")
    groups = "SELECT count(*) AS n FROM amrita_memory.memory WHERE partition_key = $1"
    assert server.sql(groups, GROUP)[0]["n"] == 0
    assert not server.sql("SELECT 1 FROM amrita_memory.lease WHERE kind = 'restore'")
