from __future__ import annotations

from typing import Any

from tests.browser.conftest import SUPER_PASSWORD, AdminServer, log_in
from tests.browser.test_viewports import worst_cases  # noqa: F401
from tests.browser.test_zh_pages import jobs, page_urls, server  # noqa: F401

JS = """() => { const w = document.documentElement.clientWidth; const out = [];
for (const e of document.querySelectorAll('body *')) { const r = e.getBoundingClientRect();
 if (r.right > w + 1 && r.width > 0) { let p = e.parentElement, inner = false;
   out.push(e.tagName + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ').join('.') : '') + ' ' + Math.round(r.right) + ' w' + Math.round(r.width)); } }
 return out.slice(0, 12); }"""


def test_debug(page: Any, server: AdminServer, jobs: list[str], worst_cases: None) -> None:  # noqa: F811
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, server.url, password=SUPER_PASSWORD, name="root")
    for url in [*page_urls(server, jobs), "/login"]:
        for lang in ("en",):
            sep = "&" if "?" in url else "?"
            page.goto(f"{server.url}{url}{sep}lang={lang}")
            sw = page.evaluate("() => document.documentElement.scrollWidth")
            if sw > 390:
                print("\n==", url, sw)
                for line in page.evaluate(JS):
                    print("   ", line)
