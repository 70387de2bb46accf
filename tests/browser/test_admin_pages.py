"""The admin page in headless Chromium: login, refusals, search, add, edit,
delete with confirm, memo, clear (superuser), CSRF, inline validation, rate limit, zh/en.

Each test checks the database, not only the page: a refused write leaves the tables as
they were, an accepted one is in ``memory`` and in ``admin_audit``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from amrita_memory_pg.bootstrap import open_memory
from tests.browser.conftest import (
    ADMIN_PASSWORD,
    SUPER_PASSWORD,
    AdminServer,
    log_in,
    run_sync,
    screenshot,
)

USER_KEY = "QQPlatform_Private_10001"
GROUP_KEY = "QQPlatform_Group_777"
PAGED_KEY = "QQPlatform_Private_20002"

SEED = [
    (USER_KEY, "用户喜欢喝乌龙茶，不加糖", 7, "preference", ("drink",)),
    (USER_KEY, "用户在上海工作，是后端工程师", 8, "event", ("work",)),
    (USER_KEY, "用户养了一只叫年糕的橘猫", 6, None, ("pet",)),
    (USER_KEY, "The user prefers answers in English for code questions", 5, "rule", ()),
    (GROUP_KEY, "群里每周五晚上打羽毛球", 6, "event", ("sport",)),
    ("global", "机器人的名字是 Amrita", 9, "knowledge", ()),
]


@pytest.fixture(scope="module")
def server(admin_server: AdminServer) -> AdminServer:
    """The module's app with sample memories and a memo in it."""

    async def seed() -> None:
        async with open_memory(admin_server.settings, startup=False) as mem:
            for key, content, importance, category, tags in SEED:
                await mem.memories.add(
                    partition_key=key,
                    scope="global" if key == "global" else "group" if "Group" in key else "user",
                    content=content,
                    importance=importance,
                    category=category,  # type: ignore[arg-type]
                    tags=tags,
                    source="auto",
                )
            await mem.memos.replace(USER_KEY, "称呼：小王")
            for n in range(1, 8):
                await mem.memories.add(
                    partition_key=PAGED_KEY, scope="user", content=f"第 {n} 条", importance=n
                )

    run_sync(seed())
    return admin_server


def count(server: AdminServer, key: str) -> int:
    rows = server.sql(
        "SELECT count(*) AS n FROM amrita_memory.memory WHERE partition_key = $1", key
    )
    return int(rows[0]["n"])


def audit_rows(server: AdminServer, action: str) -> list[Any]:
    return server.sql(
        "SELECT actor, role, action, partition_key, target_id, detail::text AS detail, ok"
        " FROM amrita_memory.admin_audit WHERE action = $1 ORDER BY id",
        action,
    )


def csrf_of(page: Any) -> str:
    value: str = page.locator("input[name=csrf]").first.get_attribute("value")
    return value


def test_a_page_without_login_redirects_and_a_write_is_refused(
    page: Any, server: AdminServer
) -> None:
    page.goto(f"{server.url}/p/{USER_KEY}/memories")
    assert page.url.startswith(f"{server.url}/login?next=")
    assert page.locator("#login-form").is_visible()
    before = count(server, USER_KEY)
    response = page.request.post(
        f"{server.url}/p/{USER_KEY}/memories/new",
        form={"content": "written without login", "importance": "5"},
        max_redirects=0,
    )
    assert response.status == 401
    assert count(server, USER_KEY) == before
    screenshot(page, "login")


def test_a_wrong_password_is_refused(page: Any, server: AdminServer) -> None:
    log_in(page, server.url, password="not-the-password")
    assert page.url.startswith(f"{server.url}/login")
    assert page.locator("#login-error").inner_text() == "密码错误。"
    page.goto(f"{server.url}/partitions")
    assert "/login" in page.url  # still not logged in


def test_partitions_show_counts_and_cap_usage(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    assert page.url == f"{server.url}/partitions"
    row = page.locator(f"tr[data-key='{USER_KEY}']")
    assert row.locator("td.num").first.inner_text() == "4"
    assert "4/100" in row.inner_text()
    assert page.locator("tr[data-key='global']").is_visible()
    # every page of the navigation is built: none is announced as planned any more
    assert page.locator("a.planned").count() == 0
    assert page.locator("a[data-nav=inspector]").inner_text() == "机器人视角"
    screenshot(page, "partitions")


def test_search_uses_the_tools_search(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{USER_KEY}/memories")
    assert page.locator("#memories tbody tr").count() == 4
    page.fill("#q", "乌龙茶")
    page.select_option("select[name=mode]", "keyword")
    page.wait_for_load_state()
    page.click("#apply")
    page.wait_for_load_state()
    rows = page.locator("#memories tbody tr")
    assert rows.count() >= 1
    assert "乌龙茶" in rows.first.inner_text()
    assert "检索到" in page.locator("#hit-count").inner_text()
    # the score column is decay_score, labelled, with the legend under the list
    assert "衰减分" in page.locator("#memories thead").inner_text()
    assert "相似度 1/(1+距离)" in page.locator("#score-legend").inner_text()
    screenshot(page, "search")
    # hybrid lists the hit, not every row of the partition
    page.goto(f"{server.url}/p/{USER_KEY}/memories?q=乌龙茶&mode=hybrid")
    hybrid = page.locator("#memories tbody tr").all_inner_texts()
    assert len(hybrid) == 1 and "乌龙茶" in hybrid[0]
    # the configured default mode (hybrid: embeds the query through the stub server)
    page.goto(f"{server.url}/p/{USER_KEY}/memories?q=橘猫&imin=5&imax=6")
    assert page.locator(".error").count() == 0
    hits = page.locator("#memories tbody tr").all_inner_texts()
    assert hits and "橘猫" in hits[0]
    assert all("\t6\t" in h or "\t5\t" in h for h in hits)  # the importance range held


def test_filters_and_sort(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{USER_KEY}/memories?sort=importance_desc&imin=6")
    rows = page.locator("#memories tbody tr")
    assert rows.count() == 3
    assert "上海" in rows.first.inner_text()  # importance 8 first
    page.goto(f"{server.url}/p/{USER_KEY}/memories?category=偏好")
    assert page.locator("#memories tbody tr").count() == 1
    page.goto(f"{server.url}/p/{USER_KEY}/memories?tags=pet,work")
    assert page.locator("#memories tbody tr").count() == 2
    page.goto(f"{server.url}/p/{USER_KEY}/memories?source=auto&scope=user&age=1")
    assert page.locator("#memories tbody tr").count() == 4
    page.goto(f"{server.url}/p/{USER_KEY}/memories?source=user")
    assert page.locator("#memories tbody tr").count() == 0
    page.goto(f"{server.url}/p/{USER_KEY}/memories?age=abc")
    assert "应为整数" in page.locator(".error").first.inner_text()
    page.goto(f"{server.url}/p/{USER_KEY}/memories?imin=0")
    assert "1–10" in page.locator(".error").first.inner_text()
    page.goto(f"{server.url}/partitions")
    page.fill("input[name=key]", "no such key")
    page.click("form[action$='/open'] button")
    page.wait_for_load_state()
    assert "不是有效的分区键" in page.locator("#error-message").inner_text()
    page.goto(f"{server.url}/partitions")
    page.fill("input[name=key]", "QQPlatform_Private_55555")  # a partition with no memories yet
    page.click("form[action$='/open'] button")
    page.wait_for_load_state()
    assert page.url.endswith("/p/QQPlatform_Private_55555/memories")
    assert "没有符合条件的记忆" in page.inner_text("main")


def test_an_old_style_key_opens_the_partition_it_is_now(page: Any, server: AdminServer) -> None:
    """`user_10001` typed in the open box or in the URL (with a search)
    is the current key's partition, not an empty page."""
    log_in(page, server.url)
    page.goto(f"{server.url}/partitions")
    page.fill("input[name=key]", "user_10001")
    page.click("form[action$='/open'] button")
    page.wait_for_load_state()
    assert page.url.endswith(f"/p/{USER_KEY}/memories")
    assert page.locator("#memories tbody tr").count() == 4
    page.goto(f"{server.url}/p/user_10001/memories?q=乌龙茶&mode=keyword")
    assert f"/p/{USER_KEY}/memories" in page.url and "q=" in page.url
    assert "乌龙茶" in page.locator("#memories tbody tr").first.inner_text()
    page.goto(f"{server.url}/p/group_777/memories")
    assert page.url.endswith(f"/p/{GROUP_KEY}/memories")


def test_pagination(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{PAGED_KEY}/memories?sort=importance_asc")
    size = server.settings.web.page_size
    assert size == 5
    rows = page.locator("#memories tbody tr")
    assert [r.split("\t")[1] for r in rows.all_inner_texts()] == [f"第 {n} 条" for n in range(1, 6)]
    assert "共 7 条，第 1/2 页" in page.locator("#pager").inner_text()
    page.click("#next-page")
    page.wait_for_load_state()
    assert "sort=importance_asc" in page.url  # the filters stay on the next page
    texts = [r.split("\t")[1] for r in page.locator("#memories tbody tr").all_inner_texts()]
    assert texts == ["第 6 条", "第 7 条"]


def test_add_memory(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{USER_KEY}/memories")
    page.click("#add-memory")
    page.fill("#content", "用户下个月去杭州出差")
    page.select_option("#category", "event")
    page.fill("#importance", "7")
    page.fill("#tags", "trip, 杭州")
    page.click("#save")
    page.wait_for_load_state()
    assert "已添加记忆" in page.locator(".done").inner_text()
    rows = server.sql(
        "SELECT id, source, author, importance, category, tags FROM amrita_memory.memory"
        " WHERE partition_key = $1 AND content = $2",
        USER_KEY,
        "用户下个月去杭州出差",
    )
    assert len(rows) == 1
    assert (rows[0]["source"], rows[0]["author"], rows[0]["importance"]) == (
        "user",
        "web:tester",
        7,
    )
    assert rows[0]["category"] == "event" and list(rows[0]["tags"]) == ["trip", "杭州"]
    audit = audit_rows(server, "memory.add")
    assert audit[-1]["target_id"] == rows[0]["id"] and audit[-1]["ok"] is True
    assert audit[-1]["actor"] == "tester" and audit[-1]["role"] == "admin"
    screenshot(page, "memories")


def test_bad_input_gets_an_inline_error_and_writes_nothing(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    before = count(server, USER_KEY)
    audited = len(audit_rows(server, "memory.add"))
    page.goto(f"{server.url}/p/{USER_KEY}/memories/new")
    page.fill("#content", "重要性写错了")
    page.fill("#importance", "11")
    page.click("#save")
    page.wait_for_load_state()
    errors = page.locator(".error").all_inner_texts()
    assert any("重要性" in e and "1–10" in e for e in errors)
    assert page.locator("#content").input_value() == "重要性写错了"  # what was typed stays
    page.fill("#content", "   ")
    page.fill("#importance", "5")
    page.click("#save")
    page.wait_for_load_state()
    assert any("不能为空" in e for e in page.locator(".error").all_inner_texts())
    screenshot(page, "add-invalid")
    assert count(server, USER_KEY) == before
    assert len(audit_rows(server, "memory.add")) == audited


def test_edit_memory(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    (row,) = server.sql(
        "SELECT id FROM amrita_memory.memory WHERE content = $1", "用户养了一只叫年糕的橘猫"
    )
    page.goto(f"{server.url}/p/{USER_KEY}/memories")
    page.click(f"tr[data-id='{row['id']}'] a.edit")
    assert page.locator("#content").input_value() == "用户养了一只叫年糕的橘猫"
    page.fill("#content", "用户养了两只猫：年糕和汤圆")
    page.fill("#importance", "9")
    page.click("#save")
    page.wait_for_load_state()
    assert "已保存记忆" in page.locator(".done").inner_text()
    (after,) = server.sql(
        "SELECT content, importance FROM amrita_memory.memory WHERE id = $1", row["id"]
    )
    assert (after["content"], after["importance"]) == ("用户养了两只猫：年糕和汤圆", 9)
    audit = audit_rows(server, "memory.edit")[-1]
    assert audit["target_id"] == row["id"] and "年糕和汤圆" in audit["detail"]


def test_delete_asks_first(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    (row,) = server.sql(
        "SELECT id FROM amrita_memory.memory WHERE content = $1", "用户在上海工作，是后端工程师"
    )
    page.goto(f"{server.url}/p/{USER_KEY}/memories")
    page.click(f"tr[data-id='{row['id']}'] a.delete")
    assert "上海" in page.locator("#doomed").inner_text()
    screenshot(page, "delete-confirm")
    # the confirm page alone deletes nothing
    assert server.sql("SELECT 1 FROM amrita_memory.memory WHERE id = $1", row["id"])
    page.click("#confirm")
    page.wait_for_load_state()
    assert "已删除记忆" in page.locator(".done").inner_text()
    assert not server.sql("SELECT 1 FROM amrita_memory.memory WHERE id = $1", row["id"])
    assert audit_rows(server, "memory.delete")[-1]["target_id"] == row["id"]


def test_a_write_without_the_csrf_token_is_refused(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{USER_KEY}/memories/new")
    token = csrf_of(page)
    before = count(server, USER_KEY)
    url = f"{server.url}/p/{USER_KEY}/memories/new"
    missing = page.request.post(url, form={"content": "no token", "importance": "5"})
    assert missing.status == 403
    assert "CSRF" in missing.text()
    wrong = page.request.post(
        url, form={"content": "wrong token", "importance": "5", "csrf": token[::-1]}
    )
    assert wrong.status == 403
    (row,) = server.sql(
        "SELECT id FROM amrita_memory.memory WHERE partition_key = $1 LIMIT 1", USER_KEY
    )
    delete = page.request.post(f"{server.url}/p/{USER_KEY}/memories/{row['id']}/delete", form={})
    assert delete.status == 403
    assert count(server, USER_KEY) == before
    # the same request with the session's token goes through (the refusal was the token)
    accepted = page.request.post(
        url, form={"content": "with the token", "importance": "5", "csrf": token}
    )
    assert accepted.ok and count(server, USER_KEY) == before + 1


def test_memo_view_and_edit(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{USER_KEY}/memo")
    assert page.locator("#memo").input_value() == "称呼：小王"
    page.fill("#memo", "称呼：小王\n生日：5月1日")
    page.click("#save")
    page.wait_for_load_state()
    assert page.locator(".done").inner_text() == "备忘录已保存。"
    (row,) = server.sql("SELECT content FROM amrita_memory.memo WHERE partition_key = $1", USER_KEY)
    assert row["content"] == "称呼：小王\n生日：5月1日"
    screenshot(page, "memo")
    page.fill("#memo", "长" * (server.settings.memo_max_chars + 1))
    page.click("#save")
    page.wait_for_load_state()
    assert "备忘录过长" in page.locator(".error").inner_text()
    (row,) = server.sql("SELECT content FROM amrita_memory.memo WHERE partition_key = $1", USER_KEY)
    assert row["content"] == "称呼：小王\n生日：5月1日"


def test_clear_is_for_the_superuser_and_needs_the_code(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{GROUP_KEY}/memories")
    assert page.locator("#clear-partition").count() == 0
    response = page.goto(f"{server.url}/p/{GROUP_KEY}/clear")
    assert response is not None and response.status == 403
    page.context.clear_cookies()
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/p/{GROUP_KEY}/memories")
    page.click("#clear-partition")
    label = page.locator("label", has=page.locator("#token")).inner_text()
    token = re.search(r"[0-9a-f]{8}", label)
    assert token is not None
    page.fill("#token", "00000000")
    page.click("#confirm")
    page.wait_for_load_state()
    assert "确认码不对" in page.locator(".error").inner_text()
    assert count(server, GROUP_KEY) == 1
    page.fill("#token", token.group(0))
    page.click("#confirm")
    page.wait_for_load_state()
    assert "已清空 1 条记忆" in page.locator(".done").inner_text()
    assert count(server, GROUP_KEY) == 0
    (audit,) = audit_rows(server, "partition.clear")
    assert (audit["actor"], audit["role"], audit["ok"]) == ("root", "superuser", True)
    page.goto(f"{server.url}/audit")
    assert page.locator("tr[data-action='partition.clear']").count() == 1
    screenshot(page, "audit")


def test_english_strings(page: Any, server: AdminServer) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/partitions?lang=en")
    assert page.locator("h1").inner_text() == "Partitions"
    page.goto(f"{server.url}/p/{USER_KEY}/memories")  # the choice is remembered
    assert page.locator("#add-memory").inner_text() == "Add memory"
    assert page.locator("a[data-nav=inspector]").inner_text() == "What the bot sees"


def test_the_l3_page_of_an_imported_store_says_how_to_carry_l3_over(
    page: Any, server: AdminServer
) -> None:
    """L3 off here, the old plugin's state imported (runs 12): the page
    says the state is kept and how to turn L3 on (--write-config)."""
    log_in(page, server.url)
    page.goto(f"{server.url}/l3")
    assert page.locator("#l3-disabled").is_visible()
    assert page.locator("#l3-kept-states").count() == 0  # nothing kept yet: nothing said
    server.sql(
        "INSERT INTO amrita_memory.l3_state (target_key, runs, updated_at)"
        " VALUES ('QQPlatform_Private_10001', 12, now())"
    )
    page.goto(f"{server.url}/l3")
    kept = page.locator("#l3-kept-states").inner_text()
    assert "1 个目标的 L3 状态（共运行过 12 次" in kept and "--write-config" in kept
    server.sql("DELETE FROM amrita_memory.l3_state")


def test_login_is_rate_limited(page: Any, server: AdminServer) -> None:
    """Last in the module: afterwards this client address waits a minute. The failures
    of the wrong-password test above count too (same address, same minute)."""
    limit = server.settings.web.login_attempts_per_minute
    wrong = 0
    for _ in range(limit + 1):
        log_in(page, server.url, password="wrong-password")
        if page.locator("#login-error").inner_text() != "密码错误。":
            break
        wrong += 1
    assert 1 <= wrong <= limit
    assert "登录失败次数过多" in page.locator("#login-error").inner_text()
    # the right password is refused too while the address waits
    response = page.request.post(
        f"{server.url}/login", form={"password": ADMIN_PASSWORD, "csrf": csrf_of(page)}
    )
    assert response.status == 429
    assert "秒后再试" in response.text()
    screenshot(page, "login-rate-limited")
