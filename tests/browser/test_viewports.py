"""Every page of the admin app at a desktop and a phone's viewport (1280×800, 390×844):
no page scrolls sideways (``scrollWidth <= clientWidth`` of the document), and a memory's
text stays readable on the phone (its cell is not a strip a few characters wide).
Operators check a bot from their phone; five pages used to scroll sideways there.

The pages are the ones ``test_zh_pages`` enumerates from the app itself, on the same
kind of seeded store plus the worst cases a real store has: a long memory without a
space, many tags, a long knowledge title."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import SUPER_PASSWORD, AdminServer, log_in, run_sync, screenshot
from tests.browser.test_zh_pages import USER, jobs, page_urls, server  # noqa: F401 (fixtures)

VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844)}
#: an unbroken run of characters as memories hold them (a URL, a key, a hash)
LONG_WORD = "https://example.com/" + "a1b2c3d4" * 20


@pytest.fixture(scope="module")
def worst_cases(server: AdminServer) -> None:  # noqa: F811 (the imported fixture)
    from amrita_memory_pg.bootstrap import open_memory

    async def seed() -> None:
        async with open_memory(server.settings, startup=False) as mem:
            await mem.memories.add(
                partition_key=USER,
                scope="user",
                content=f"一条很长的记忆，带着链接 {LONG_WORD} 和很多很多文字" * 3,
                tags=[f"tag-{n}-很长的标签" for n in range(8)],
                importance=9,
            )
            await mem.knowledge.create(
                kid="0000000b",
                title="一个很长很长的知识条目标题" * 4,
                summary="摘要" * 40,
                body=LONG_WORD,
            )

    run_sync(seed())


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_no_page_scrolls_sideways(
    page: Any,
    server: AdminServer,  # noqa: F811
    jobs: list[str],  # noqa: F811
    worst_cases: None,
    viewport: str,
) -> None:
    width, height = VIEWPORTS[viewport]
    page.set_viewport_size({"width": width, "height": height})
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    wide: dict[str, int] = {}
    # English words run longer than Chinese: both languages on the phone; the desktop's
    # width has room to spare, Chinese (the default) is checked there
    langs = ("zh", "en") if viewport == "phone" else ("zh",)
    for url in [*page_urls(server, jobs), "/login"]:
        for lang in langs:
            sep = "&" if "?" in url else "?"
            response = page.goto(f"{server.url}{url}{sep}lang={lang}")
            assert response is not None and response.status < 400, url
            scroll, client = page.evaluate(
                "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
            )
            if scroll > client:
                wide[f"{url} ({lang})"] = scroll
    if viewport == "phone":
        page.goto(f"{server.url}/p/{USER}/memories?lang=zh")
        screenshot(page, "phone-memories")
    assert not wide, f"wider than {width} px: {wide}"
    assert missing == []  # the icon too: every page names one (no /favicon.ico 404)


def test_a_memory_stays_readable_on_a_phone(
    page: Any,
    server: AdminServer,  # noqa: F811
    worst_cases: None,
) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/p/{USER}/memories?lang=zh")
    widths = page.evaluate(
        "() => [...document.querySelectorAll('#memories td.content')]"
        ".map(td => td.getBoundingClientRect().width)"
    )
    assert widths and min(widths) >= 200, widths  # ~13 Chinese characters a line at least
    page.goto(f"{server.url}/search?q=喜欢猫&lang=zh")
    widths = page.evaluate(
        "() => [...document.querySelectorAll('td.content')]"
        ".map(td => td.getBoundingClientRect().width)"
    )
    assert widths and min(widths) >= 200, widths


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_the_overview_charts_have_dates_and_a_value_axis_inside_the_drawing(
    page: Any,
    server: AdminServer,  # noqa: F811
    viewport: str,
) -> None:
    """They used to be black bars without dates or axis, the largest value's label cut
    off, 600 px wide whatever the screen."""
    width, height = VIEWPORTS[viewport]
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    page.goto(f"{server.url}/overview?lang=zh")
    screenshot(page, f"{viewport}-overview")
    charts = page.evaluate(
        """() => [...document.querySelectorAll('svg.chart')].map(svg => {
             const box = svg.getBoundingClientRect();
             const parent = svg.parentElement.getBoundingClientRect();
             const texts = [...svg.querySelectorAll('text')].map(t => {
               const r = t.getBoundingClientRect();
               return {text: t.textContent, day: t.classList.contains('day'),
                       inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5
                               && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5};
             });
             return {width: box.width, room: parent.width, texts,
                     bars: svg.querySelectorAll('rect.bar').length,
                     fill: getComputedStyle(svg.querySelector('rect.bar')).fill};
           })"""
    )
    assert len(charts) == 3
    for chart in charts:
        assert chart["bars"] == 30
        assert chart["width"] <= chart["room"]
        days = [t["text"] for t in chart["texts"] if t["day"]]
        assert len(days) >= 4 and all(len(d) == 5 and d[2] == "-" for d in days), days
        assert next(t["text"] for t in chart["texts"] if not t["day"]) == "0"  # the axis
        assert all(t["inside"] for t in chart["texts"]), chart["texts"]
        assert chart["fill"] != "rgb(0, 0, 0)"  # not black bars
