"""Every page of the admin app, rendered in Chinese, shows no English words.

The GET routes are enumerated from the app itself (a page added later is checked without
editing this test); path parameters are filled with real ids of a seeded store: a
partition with memories and a memo, a knowledge entry and a suggestion, a profile, and a
finished sweep job and re-embed job (their phases and results are the seams the issue
found). The visible text (``innerText`` of the body) may hold ASCII letters only inside
identifiers: a token with a digit or an underscore (partition keys, ids, ``L1``…), the
seeded values (model name, fingerprint), and the small allow-list below.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.routing import Mount, Route

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.maintenance.backup import list_backups
from amrita_memory_pg.testing import StubEmbeddingServer
from amrita_memory_pg.web.app import create_admin_app
from amrita_memory_pg.web.pages import PAGES
from tests.browser.conftest import (
    SUPER_PASSWORD,
    AdminServer,
    log_in,
    run_admin_server,
    run_sync,
    web_settings,
)

USER = "QQPlatform_Private_10001"
MODEL = "nomic-embed-text"
#: words that are names, not prose: the product and the tools an operator types or reads
#: in other programs, units, and the language switch's own name for English
ALLOWED = {
    "PostgreSQL",
    "pgvector",
    "SQL",
    "JSON",
    "JSONL",
    "LLM",
    "API",
    "URL",
    "CSRF",
    "QQ",
    "HNSW",
    "English",
    "amrita",
    "memory",  # the CLI's name, amrita-memory, in commands shown to copy
    "ID",
    "Markdown",
    "token",
    "tokens",
    "ms",
    "KB",
    "MB",
    "GB",
    "UTC",
    "ollama",
    "embed",  # the protocol name ollama-embed, shown as configured
    "openai",
    "local",  # the offline model's name
}


#: a memory or job id (or its 8-character prefix) that happens to hold no digit
HEX_ID = re.compile(r"[0-9a-f]{8,}")


def english_words(text: str, identifiers: set[str]) -> list[str]:
    """The tokens that are plain ASCII words, not identifiers or allow-listed names."""
    for value in sorted(identifiers, key=len, reverse=True):
        text = text.replace(value, " ")
    # a config section (``[trail]``) or setting (``[injection] enabled``) is a name
    text = re.sub(r"\[[a-z_.]+\]( [a-z_]+( = (true|false))?)?", " ", text)
    found = []
    for token in re.split(r"[^A-Za-z0-9_]+", text):
        if len(token) < 2 or not token.isalpha() or not token.isascii():
            continue
        if token in ALLOWED or HEX_ID.fullmatch(token):
            continue
        found.append(token)
    return found


@pytest.fixture(scope="module")
def server(
    module_db: str, stub_embedder: StubEmbeddingServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdminServer]:
    settings = web_settings(
        module_db,
        tmp_path_factory.mktemp("zh-data"),
        stub_embedder.url,
        **{"subconscious.enabled": True, "subconscious.target_user_id": "10001"},
    )

    async def seed() -> None:
        from amrita_memory_pg.domain.profile import ProfileActor, ProfileEdit
        from amrita_memory_pg.maintenance.backup import create_backup

        async with open_memory(settings, startup=False) as mem:
            for n in range(3):
                await mem.memories.add(
                    partition_key=USER, scope="user", content=f"喜欢猫 {n}", importance=5
                )
            await mem.memos.replace(USER, "称呼：小王")
            await mem.knowledge.create(kid="0000000a", title="咖啡", summary="烘焙", body="浅烘")
            await mem.knowledge.suggest(
                author_id="10001", action="create", title="猫", summary="不吃巧克力",
                body="巧克力", reason="有人问过",
            )  # fmt: skip
            actor = ProfileActor(kind="chat", who="10001")
            await mem.profiles.edit(USER, ProfileEdit("后端工程师", ("喜欢猫",)), actor)
            await create_backup(mem.store)  # the backups page and its restore's

    run_sync(seed())
    with run_admin_server(settings, module_db) as running:
        yield running


def get_routes(server: AdminServer) -> list[str]:
    """The admin app's GET page routes (not the JSON ones, not static files): the app's
    own and every page module's (FastAPI wraps included routers in objects of its own)."""
    app = create_admin_app(None, server.settings)
    paths = []
    routes = [*app.routes, *(r for module in PAGES for r in module.router.routes)]
    for route in routes:
        if isinstance(route, Mount) or not isinstance(route, Route):
            continue
        # downloads (a partition's export, a backup's files) are files, not pages
        if "GET" in (route.methods or set()) and not route.path.endswith(
            (".json", ".jsonl", ".dump")
        ):
            paths.append(route.path)
    return sorted(set(paths))


def start_job(page: Any, server: AdminServer, kind: str) -> str:
    page.goto(f"{server.url}/status")
    page.click(f"#job-{kind}")
    page.wait_for_load_state()
    page.click("#confirm")  # the confirm page (what it will cost, asked first)
    page.wait_for_load_state()
    page.wait_for_selector("#job[data-state='done']", timeout=20_000)
    return str(page.url.rsplit("/", 1)[1].split("?")[0])


@pytest.fixture(scope="module")
def jobs(server: AdminServer, browser: Any) -> list[str]:
    """A finished sweep and re-embed job (their pages are among the ones checked)."""
    browser.clear_cookies()
    tab = browser.new_page()
    try:
        log_in(tab, server.url, password=SUPER_PASSWORD, name="root")
        return [start_job(tab, server, "sweep"), start_job(tab, server, "reembed")]
    finally:
        tab.close()


def page_urls(server: AdminServer, jobs: list[str]) -> list[str]:
    """One URL per GET page of the app, with real ids in it."""
    memory_id = str(server.sql("SELECT min(id) AS id FROM amrita_memory.memory")[0]["id"])
    sid = str(server.sql("SELECT min(id) AS id FROM amrita_memory.knowledge_suggestion")[0]["id"])
    backups = list_backups(server.settings.resolved_data_dir() / "backups")
    params = {
        "key": USER,
        "memory_id": memory_id,
        "kid": "0000000a",
        "sid": sid,
        "kind": "reembed",
        "stem": backups[0].stem,
    }
    urls: list[str] = []
    for path in get_routes(server):
        if path == "/planned/{page}":
            continue  # nothing is planned any more: each key would be a 404
        if path == "/status/jobs/{job_id}":
            urls += [f"/status/jobs/{job}" for job in jobs]
            continue
        url = path
        for name, value in params.items():
            url = url.replace("{" + name + "}", value)
        assert "{" not in url, f"no value for a parameter of {path}"
        # the "open a partition" forms need the key they open
        urls.append(f"{url}?key={USER}" if path.endswith("/open") else url)
    urls += [f"/inspector?chat={USER}&message=猫", f"/l3?target={USER}", "/search?q=喜欢猫"]
    assert len(urls) >= 20
    return urls


def test_every_page_in_chinese_has_no_english_words(
    page: Any, server: AdminServer, jobs: list[str]
) -> None:
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    fingerprint = str(
        server.sql("SELECT embed_fingerprint AS f FROM amrita_memory.memory LIMIT 1")[0]["f"]
    )
    zone = server.settings.subconscious.idle_timezone or ""
    # configured values are names: the zones of the heatmap and of the page's times
    identifiers = {USER, MODEL, fingerprint, "root", zone, server.settings.web.timezone, *jobs}
    urls = page_urls(server, jobs)
    problems: dict[str, list[str]] = {}
    for url in urls:
        sep = "&" if "?" in url else "?"
        response = page.goto(f"{server.url}{url}{sep}lang=zh")
        assert response is not None and response.status < 400, url
        # data shown as stored (host names, URLs, audit details) is marked translate="no"
        text = page.evaluate(
            "() => { document.querySelectorAll('[translate=no]').forEach(e => e.remove());"
            " return document.body.innerText; }"
        )
        words = english_words(text, identifiers)
        # option values of every <select> are visible text too
        for option in page.locator("option").all_inner_texts():
            words += english_words(option, identifiers)
        if words:
            problems[url] = sorted(set(words))
    assert not problems, "\n".join(f"{url}: {words}" for url, words in problems.items())


#: a count of one followed by a plural noun ("1 entries"), not inside a number
ONE_PLURAL = re.compile(r"(?<![\d.,])1 [a-z]{2,}s\b")


def test_every_page_in_english_has_no_one_plural(
    page: Any, server: AdminServer, jobs: list[str]
) -> None:
    """The seeded store has one knowledge entry, one profile, one memo, one run…: an
    English page that says "1 entries" builds a plural from a count."""
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    problems = {}
    for url in page_urls(server, jobs):
        sep = "&" if "?" in url else "?"
        page.goto(f"{server.url}{url}{sep}lang=en")
        found = ONE_PLURAL.findall(page.locator("body").inner_text())
        if found:
            problems[url] = found
    assert not problems, problems


def test_the_open_partition_placeholder_fits_its_box(page: Any, server: AdminServer) -> None:
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    for lang in ("en", "zh"):
        page.goto(f"{server.url}/partitions?lang={lang}")
        text_width, box_width = page.evaluate(
            """() => {
              const box = document.getElementById("open-key");
              const style = getComputedStyle(box);
              const ctx = document.createElement("canvas").getContext("2d");
              ctx.font = style.font;
              const pad = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
              return [ctx.measureText(box.placeholder).width, box.clientWidth - pad];
            }"""
        )
        assert text_width <= box_width, (lang, text_width, box_width)


def test_memory_list_shows_creation_time_in_the_configured_zone(
    page: Any, server: AdminServer
) -> None:
    """An imported memory keeps its old creation time; the list shows it next to the
    update time, both in ``[web] timezone`` (Asia/Shanghai, UTC+8), and names the zone."""
    (row,) = server.sql(
        "UPDATE amrita_memory.memory SET created_at = '2025-01-01 00:30+00'"
        " WHERE id = (SELECT min(id) FROM amrita_memory.memory) RETURNING id"
    )
    assert server.settings.web.timezone == "Asia/Shanghai"
    log_in(page, server.url)
    page.goto(f"{server.url}/p/{USER}/memories?lang=zh")
    headers = page.locator("#memories thead th").all_inner_texts()
    assert "创建时间" in headers and "更新时间" in headers
    line = page.locator(f"#memories tr[data-id='{row['id']}']")
    assert line.locator("td.created").inner_text() == "2025-01-01 08:30"
    assert line.locator("td.updated").inner_text() != "2025-01-01 08:30"
    assert "Asia/Shanghai" in page.locator("#times-zone").inner_text()
    page.goto(f"{server.url}/partitions?lang=zh")
    assert "最新一条记忆的创建时间" in page.locator("table thead").inner_text()
    assert "Asia/Shanghai" in page.locator("#times-zone").inner_text()


def test_inspector_with_injection_off_shows_read_memory_and_the_setting(
    page: Any, server: AdminServer
) -> None:
    """Out of the box (injection off) the block is nearly empty: the page says which
    setting turns injection on and lists what read_memory finds, without logging a recall."""
    assert server.settings.injection.enabled is False
    recalls = server.sql("SELECT count(*) AS n FROM amrita_memory.memory_access")[0]["n"]
    log_in(page, server.url)
    page.goto(f"{server.url}/inspector?chat={USER}&message=喜欢猫&lang=zh")
    assert "[injection] enabled = true" in page.locator("#injection-off").inner_text()
    rows = page.locator("#read-memory tbody tr")
    assert rows.count() == 3
    assert "喜欢猫" in rows.first.inner_text()
    after = server.sql("SELECT count(*) AS n FROM amrita_memory.memory_access")[0]["n"]
    assert after == recalls


def test_a_paused_partition_is_marked_on_its_page_and_in_the_list(
    page: Any, server: AdminServer
) -> None:
    key = "QQPlatform_Group_4242"

    async def pause() -> None:
        async with open_memory(server.settings, startup=False) as mem:
            await mem.memories.add(partition_key=key, scope="group", content="群规", importance=5)
            await mem.trail.pause(key, by="root")

    run_sync(pause())
    log_in(page, server.url)
    page.goto(f"{server.url}/partitions?lang=zh")
    assert "已暂停" in page.locator(f"tr[data-key='{key}']").inner_text()
    assert "已暂停" not in page.locator(f"tr[data-key='{USER}']").inner_text()
    page.goto(f"{server.url}/p/{key}/memories?lang=zh")
    assert page.locator("#paused-marker").inner_text() == "已暂停"
    page.goto(f"{server.url}/p/{USER}/memories?lang=zh")
    assert page.locator("#paused-marker").count() == 0


def test_l3_says_no_messages_or_runs_only_when_there_are_none(
    page: Any, server: AdminServer
) -> None:
    log_in(page, server.url)
    page.goto(f"{server.url}/l3?lang=zh")
    target = page.locator(f".target[data-target='{USER}']")
    assert "还没有消息或运行" in target.locator(".next-window").inner_text()

    async def run_once() -> None:
        async with open_memory(server.settings, startup=False) as mem:
            runs = mem.consolidation
            start = datetime.now(UTC) - timedelta(days=1)
            cycle = await runs.start_cycle(USER, trigger="manual", now=start, dry_run=False)
            await runs.finish_cycle(
                USER, cycle, now=start + timedelta(minutes=1), ok=True, error=None,
                iterations=1, tool_calls=0, memories_changed=0, summary="无事",
            )  # fmt: skip

    run_sync(run_once())
    # the scheduler's own count of the target's runs (what "已运行 N 次" reads)
    server.sql(
        "INSERT INTO amrita_memory.l3_state (target_key, runs) VALUES ($1, 1)"
        " ON CONFLICT (target_key) DO UPDATE SET runs = 1",
        USER,
    )
    page.goto(f"{server.url}/l3?lang=zh")
    target = page.locator(f".target[data-target='{USER}']")
    assert "已运行 1 次" in target.inner_text()
    assert "还没有消息或运行" not in target.locator(".next-window").inner_text()


def test_overview_counts_and_daily_charts_drawn_as_svg(page: Any, server: AdminServer) -> None:
    """Counts by scope/category/source match the table; today's bar of "written" holds
    today's memories; the charts are inline SVG (no script loaded for them)."""
    log_in(page, server.url)
    page.goto(f"{server.url}/overview?lang=zh")
    by_scope = server.sql(
        "SELECT scope, count(*)::int AS n FROM amrita_memory.memory GROUP BY scope"
    )
    for row in by_scope:
        cells = page.locator(f"#counts-scope tr[data-value='{row['scope']}'] td")
        assert cells.nth(1).inner_text() == str(row["n"])
    assert page.locator("#counts-scope tr[data-value='user'] td").first.inner_text() == "用户"
    bars = page.locator("#chart-written svg rect")
    assert bars.count() == 30
    today = server.sql(
        "SELECT count(*)::int AS n FROM amrita_memory.memory"
        " WHERE (created_at AT TIME ZONE 'Asia/Shanghai')::date"
        " = (now() AT TIME ZONE 'Asia/Shanghai')::date"
    )[0]["n"]
    assert today > 0 and bars.last.get_attribute("data-value") == str(today)
    assert page.locator("#chart-recalls svg rect").count() == 30
    assert page.locator("#chart-tokens svg rect").count() == 30
    assert page.locator("script[src*='chart'], script[src^='http']").count() == 0
