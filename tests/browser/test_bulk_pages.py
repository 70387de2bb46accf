"""Search across partitions, bulk delete / tag / pause, and every time in the configured
zone, in headless Chromium.

Each test checks the database too: the rows a bulk action changed (and only those), their
change history (``memory_change``) and their audit rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from amrita_memory_pg.bootstrap import open_memory
from tests.browser.conftest import SUPER_PASSWORD, AdminServer, log_in, run_sync, screenshot
from tests.browser.test_zh_pages import english_words

TEA_USER = "QQPlatform_Private_30003"
TEA_GROUP = "QQPlatform_Group_880"
OTHER = "QQPlatform_Private_40004"
LIST_KEY = "QQPlatform_Private_50005"

SEED = [
    (TEA_USER, "user", "用户喜欢喝乌龙茶"),
    (TEA_USER, "user", "用户住在杭州"),
    (TEA_GROUP, "group", "群友周末一起喝乌龙茶"),
    (OTHER, "user", "用户每天跑步五公里"),
    *((LIST_KEY, "user", f"列表里的第 {n} 条") for n in range(1, 5)),
]


@pytest.fixture(scope="module")
def server(admin_server: AdminServer) -> AdminServer:
    async def seed() -> None:
        async with open_memory(admin_server.settings, startup=False) as mem:
            for key, scope, content in SEED:
                await mem.memories.add(
                    partition_key=key, scope=scope, content=content, importance=5, tags=("seed",)
                )

    run_sync(seed())
    return admin_server


#: values shown as they are: the seeded tag and the configured zone
NAMES = {"seed", "Asia/Shanghai"}


def ids_of(server: AdminServer, key: str) -> list[str]:
    rows = server.sql(
        "SELECT id FROM amrita_memory.memory WHERE partition_key = $1 ORDER BY created_at, id", key
    )
    return [str(r["id"]) for r in rows]


def tick(page: Any, key: str, memory_id: str) -> None:
    page.check(f"input[name=sel][value='{key}/{memory_id}']")


def test_search_across_partitions_shows_rows_of_two_partitions_with_their_keys(
    page: Any, server: AdminServer
) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/search?lang=zh")
    assert page.locator("a[data-nav=search]").inner_text() == "全局检索"
    page.fill("#q", "乌龙茶")
    page.select_option("select[name=mode]", "keyword")
    page.click("#apply")
    page.wait_for_load_state()
    rows = page.locator("#search-hits tbody tr")
    keys = {rows.nth(i).get_attribute("data-key") for i in range(rows.count())}
    assert keys == {TEA_USER, TEA_GROUP}
    assert rows.count() == 2
    for key in (TEA_USER, TEA_GROUP):
        link = page.locator(f"#search-hits tr[data-key='{key}'] td.partition a")
        assert link.inner_text() == key
        assert link.get_attribute("href", timeout=1000).endswith(f"/p/{key}/memories")
        score = page.locator(f"#search-hits tr[data-key='{key}'] td.decay").inner_text()
        assert float(score) > 0  # the reference's decay score: never 0 for a real hit
    # the bound is said on the page, with the numbers searched
    assert "200" in page.locator("#search-bounds").inner_text()
    partitions = server.sql("SELECT count(*) AS n FROM amrita_memory.partition_usage")[0]["n"]
    assert f"共 {partitions} 个" in page.locator("#hit-count").inner_text()
    assert "衰减分" in page.locator("#score-legend").inner_text()
    # a search writes nothing: no recall is logged for an operator's look
    assert server.sql("SELECT count(*) AS n FROM amrita_memory.memory_access")[0]["n"] == 0
    assert not english_words(page.locator("main").inner_text(), {TEA_USER, TEA_GROUP, *NAMES})
    # the default (hybrid) mode finds both as well; the other partitions' nearest rows
    # share no word and lie far off: cut off as in one partition's search
    assert server.settings.retrieval.default_mode == "hybrid"
    page.goto(f"{server.url}/search?q=乌龙茶&lang=zh")
    rows = page.locator("#search-hits tbody tr")
    keys = {rows.nth(i).get_attribute("data-key") for i in range(rows.count())}
    assert keys == {TEA_USER, TEA_GROUP}
    screenshot(page, "search-all")


def test_bulk_delete_asks_then_deletes_exactly_the_selected_rows(
    page: Any, server: AdminServer
) -> None:
    ids = ids_of(server, LIST_KEY)
    doomed, kept = ids[:2], ids[2:]
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{LIST_KEY}/memories?lang=zh")
    for memory_id in doomed:
        tick(page, LIST_KEY, memory_id)
    page.select_option("#bulk-action", "delete")
    page.click("#bulk-apply")
    page.wait_for_load_state()
    # the confirm page says how many, and nothing is gone yet
    assert "2 条" in page.locator("#bulk-count").inner_text()
    assert page.locator("#bulk-rows tbody tr").count() == 2
    assert ids_of(server, LIST_KEY) == ids
    assert not english_words(page.locator("main").inner_text(), {LIST_KEY, *doomed, *NAMES})
    screenshot(page, "bulk-delete-confirm")
    page.click("#confirm")
    page.wait_for_load_state()
    assert page.url.startswith(f"{server.url}/p/{LIST_KEY}/memories")
    assert "已删除记忆：2 条" in page.locator("p.done").inner_text()
    assert ids_of(server, LIST_KEY) == kept
    history = server.sql(
        "SELECT memory_id, actor_kind, actor_id FROM amrita_memory.memory_change"
        " WHERE op = 'delete' AND partition_key = $1",
        LIST_KEY,
    )
    assert sorted(str(r["memory_id"]) for r in history) == sorted(doomed)
    assert {(r["actor_kind"], r["actor_id"]) for r in history} == {("person", "web:tester")}
    audited = server.sql(
        "SELECT target_id FROM amrita_memory.admin_audit"
        " WHERE action = 'memory.delete' AND ok AND partition_key = $1",
        LIST_KEY,
    )
    assert sorted(str(r["target_id"]) for r in audited) == sorted(doomed)


def test_bulk_without_the_csrf_token_or_a_selection_changes_nothing(
    page: Any, server: AdminServer
) -> None:
    before = ids_of(server, LIST_KEY)
    log_in(page, server.url)
    response = page.request.post(
        f"{server.url}/bulk",
        form={"action": "delete", "confirm": "yes", "sel": f"{LIST_KEY}/{before[0]}"},
        max_redirects=0,
    )
    assert response.status == 403
    page.goto(f"{server.url}/p/{LIST_KEY}/memories?lang=zh")
    boxes = page.locator("input[name=sel]")
    page.check("#bulk-all")  # ticks every row …
    assert all(boxes.nth(i).is_checked() for i in range(boxes.count()))
    page.uncheck("#bulk-all")  # … and none again: the tag below has nothing to go to
    page.select_option("#bulk-action", "tag")
    page.fill("#bulk-tag", "无")
    page.click("#bulk-apply")
    page.wait_for_load_state()
    assert "没有选中任何记忆" in page.locator("p.error").inner_text()
    assert ids_of(server, LIST_KEY) == before


def test_bulk_tag_adds_a_tag_to_the_selected_rows_only(page: Any, server: AdminServer) -> None:
    chosen = [ids_of(server, TEA_USER)[0], ids_of(server, TEA_GROUP)[0]]
    log_in(page, server.url)
    page.goto(f"{server.url}/search?q=乌龙茶&mode=keyword&lang=zh")
    for key, memory_id in zip((TEA_USER, TEA_GROUP), chosen, strict=True):
        tick(page, key, memory_id)
    page.select_option("#bulk-action", "tag")
    page.fill("#bulk-tag", "饮品，重要")
    page.click("#bulk-apply")
    page.wait_for_load_state()
    assert page.url.startswith(f"{server.url}/search?")
    assert "已添加标签的记忆：2 条" in page.locator("p.done").inner_text()
    rows = server.sql("SELECT id, tags FROM amrita_memory.memory")
    for row in rows:
        expected = ["seed", "饮品", "重要"] if str(row["id"]) in chosen else ["seed"]
        assert list(row["tags"]) == expected, row
    changes = server.sql(
        "SELECT memory_id FROM amrita_memory.memory_change"
        " WHERE op <> 'create' AND actor_id = 'web:tester' AND memory_id = ANY($1::text[])",
        chosen,
    )
    assert sorted(str(r["memory_id"]) for r in changes) == sorted(chosen)
    audited = server.sql(
        "SELECT target_id, detail::text AS detail FROM amrita_memory.admin_audit"
        " WHERE action = 'memory.edit' AND detail ? 'bulk'"
    )
    assert sorted(str(r["target_id"]) for r in audited) == sorted(chosen)
    assert all("重要" in r["detail"] for r in audited)


def test_bulk_importance_sets_the_importance_of_the_selected_rows_only(
    page: Any, server: AdminServer
) -> None:
    chosen = ids_of(server, LIST_KEY)[:2]
    before = {
        str(r["id"]): r["importance"]
        for r in server.sql("SELECT id, importance FROM amrita_memory.memory")
    }
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{LIST_KEY}/memories?lang=zh")
    for memory_id in chosen:
        tick(page, LIST_KEY, memory_id)
    page.select_option("#bulk-action", "importance")
    page.select_option("#bulk-importance", "9")
    page.click("#bulk-apply")
    page.wait_for_load_state()
    assert "已修改重要度的记忆：2 条" in page.locator("p.done").inner_text()
    after = {
        str(r["id"]): r["importance"]
        for r in server.sql("SELECT id, importance FROM amrita_memory.memory")
    }
    assert {k: v for k, v in after.items() if after[k] != before[k]} == dict.fromkeys(chosen, 9)
    audited = server.sql(
        "SELECT target_id FROM amrita_memory.admin_audit WHERE action = 'memory.edit'"
        " AND detail -> 'after' ? 'importance'"
    )
    assert sorted(str(r["target_id"]) for r in audited) == sorted(chosen)
    # without an importance nothing changes, and the page says what is missing
    tick(page, LIST_KEY, chosen[0])
    page.select_option("#bulk-action", "importance")
    page.click("#bulk-apply")
    page.wait_for_load_state()
    assert "请选择 1–10 的重要度" in page.locator(".error").inner_text()


def test_a_bulk_tag_one_row_cannot_take_changes_no_row(page: Any, server: AdminServer) -> None:
    """The edit form's rule for a memory's tags (at most 200 characters) holds for a bulk
    tag too: one row over it refuses the action, in one transaction, and it is audited."""
    first, second = ids_of(server, LIST_KEY)[:2]
    server.sql(
        "UPDATE amrita_memory.memory SET tags = ARRAY[repeat('长', 199)] WHERE id = $1", first
    )
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{LIST_KEY}/memories?lang=zh")
    tick(page, LIST_KEY, second)
    tick(page, LIST_KEY, first)
    page.select_option("#bulk-action", "tag")
    page.fill("#bulk-tag", "新标签")
    page.click("#bulk-apply")
    page.wait_for_load_state()
    assert "标签" in page.locator("p.error").inner_text()
    tags = server.sql(
        "SELECT id, tags FROM amrita_memory.memory WHERE id = ANY($1::text[])", [first, second]
    )
    assert all("新标签" not in row["tags"] for row in tags)
    refused = server.sql(
        "SELECT target_id FROM amrita_memory.admin_audit WHERE action = 'memory.edit' AND NOT ok"
    )
    assert len(refused) == 1


def test_bulk_pause_pauses_the_partitions_of_the_selected_rows(
    page: Any, server: AdminServer
) -> None:
    log_in(page, server.url)  # an admin: pausing is the superuser's, as a single pause
    page.goto(f"{server.url}/search?q=乌龙茶&mode=keyword&lang=zh")
    assert page.locator("#bulk-action option[value=pause]").count() == 0
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/search?q=乌龙茶&mode=keyword&lang=zh")
    for key in (TEA_USER, TEA_GROUP):
        tick(page, key, ids_of(server, key)[0])
    page.select_option("#bulk-action", "pause")
    page.click("#bulk-apply")
    page.wait_for_load_state()
    assert "已暂停的分区：2 个" in page.locator("p.done").inner_text()
    paused = server.sql("SELECT partition_key, paused_by FROM amrita_memory.paused_partition")
    assert {r["partition_key"] for r in paused} == {TEA_USER, TEA_GROUP}
    assert {r["paused_by"] for r in paused} == {"person:web:root"}
    audited = server.sql(
        "SELECT partition_key FROM amrita_memory.admin_audit WHERE action = 'partition.pause'"
    )
    assert sorted(r["partition_key"] for r in audited) == sorted([TEA_USER, TEA_GROUP])
    page.goto(f"{server.url}/partitions?lang=zh")
    assert "已暂停" in page.locator(f"tr[data-key='{TEA_GROUP}']").inner_text()
    assert "已暂停" not in page.locator(f"tr[data-key='{OTHER}']").inner_text()


FIXED = "2025-01-01 00:30+00"
SHOWN = "2025-01-01 08:30"


def test_times_on_every_page_are_in_the_configured_zone_and_named(
    page: Any, server: AdminServer
) -> None:
    """A fixed UTC time (00:30Z) reads 08:30 in Asia/Shanghai on each page that shows a
    stored time, and the page names the zone."""
    assert server.settings.web.timezone == "Asia/Shanghai"

    async def seed() -> None:
        from amrita_memory_pg.domain.profile import ProfileActor, ProfileEdit

        async with open_memory(server.settings, startup=False) as mem:
            await mem.knowledge.create(kid="0000000b", title="茶", summary="乌龙", body="半发酵")
            await mem.trail.pause(OTHER, by="root")
            actor = ProfileActor(kind="chat", who="40004")
            await mem.profiles.edit(OTHER, ProfileEdit("跑步爱好者", ("每天跑步",)), actor)
            runs = mem.consolidation
            cycle = await runs.start_cycle(
                OTHER, trigger="manual", now=datetime.now(UTC), dry_run=False
            )
            await runs.finish_cycle(
                OTHER, cycle, now=datetime.now(UTC), ok=True, error=None,
                iterations=1, tool_calls=0, memories_changed=0, summary="无事",
            )  # fmt: skip

    run_sync(seed())
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/status/jobs/sweep/confirm")
    page.click("#confirm")
    page.wait_for_selector("#job[data-state='done']", timeout=20_000)
    job_id = page.url.rsplit("/", 1)[1].split("?")[0]
    # the job list is the process's own (not re-read): its real start, shown at +8
    (job,) = server.sql("SELECT started_at FROM amrita_memory.job WHERE id = $1", job_id)
    started = job["started_at"].astimezone(ZoneInfo("Asia/Shanghai"))
    assert job["started_at"].utcoffset() is not None
    for path, shown in (
        ("/status", started.strftime("%H:%M:%S")),
        (f"/status/jobs/{job_id}", started.strftime("%Y-%m-%d %H:%M:%S")),
    ):
        page.goto(f"{server.url}{path}?lang=zh")
        assert shown in page.locator("main").inner_text(), path
        assert "Asia/Shanghai" in page.locator("#times-zone").inner_text(), path
    server.sql(f"UPDATE amrita_memory.profile SET updated_at = '{FIXED}'")
    server.sql(f"UPDATE amrita_memory.profile_history SET changed_at = '{FIXED}'")
    server.sql(f"UPDATE amrita_memory.consolidation_cycle SET started_at = '{FIXED}'")
    server.sql(f"UPDATE amrita_memory.knowledge SET created_at = '{FIXED}', updated_at = '{FIXED}'")
    server.sql(f"UPDATE amrita_memory.paused_partition SET paused_at = '{FIXED}'")
    server.sql(f"UPDATE amrita_memory.admin_audit SET at = '{FIXED}'")
    server.sql(f"UPDATE amrita_memory.memory SET created_at = '{FIXED}', updated_at = '{FIXED}'")
    memory_id = ids_of(server, OTHER)[0]
    pages = [
        "/profiles",
        f"/profiles/u/{OTHER}",
        f"/l3?target={OTHER}",
        "/knowledge",
        "/knowledge/e/0000000b",
        "/paused",
        "/audit",
        f"/p/{OTHER}/memories",
        f"/p/{OTHER}/memories/{memory_id}/trail",
        "/search?q=跑步&mode=keyword",
        "/partitions",
    ]
    for path in pages:
        sep = "&" if "?" in path else "?"
        page.goto(f"{server.url}{path}{sep}lang=zh")
        body = page.locator("main").inner_text()
        assert SHOWN in body, path
        assert "00:30" not in body, path
        assert page.locator("#times-zone").count() == 1, path
        assert "Asia/Shanghai" in page.locator("#times-zone").inner_text(), path
