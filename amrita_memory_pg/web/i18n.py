"""The admin page's UI strings (``web/locales/<lang>.toml``), through the one mechanism
of :mod:`amrita_memory_pg.i18n`.

A page is shown in ``?lang=`` (remembered in a cookie: a person's choice), else that
cookie, else the ``language`` setting (``AMRITA_MEMORY_LANGUAGE``, default Chinese) — the
same setting that picks the CLI's. The browser's Accept-Language is not followed: the docs
and the setting decide, not what a browser happens to send. A unit test
(tests/unit/test_web_i18n.py) keeps every file on the same keys and placeholders; pages
added by other modules add their keys to every file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from amrita_memory_pg.i18n import DEFAULT_LANG, LANGS, Catalog, load_locale

__all__ = [
    "DEFAULT_LANG",
    "EN",
    "LANGS",
    "LANG_COOKIE",
    "STRINGS",
    "ZH",
    "load_locale",
    "pick_lang",
    "translator",
]

LANG_COOKIE = "amp_admin_lang"
CATALOG = Catalog("amrita_memory_pg.web")
STRINGS: Mapping[str, Mapping[str, str]] = CATALOG.strings
ZH: Mapping[str, str] = STRINGS["zh"]
EN: Mapping[str, str] = STRINGS["en"]


def translator(lang: str) -> Callable[..., str]:
    """``t(key, **values)`` of the page's strings in ``lang``."""
    return CATALOG.translator(lang)


def pick_lang(query: str | None, cookie: str | None, configured: str = DEFAULT_LANG) -> str:
    """``?lang=`` > cookie > the ``language`` setting."""
    for choice in (query, cookie):
        if choice in LANGS:
            return choice
    return configured if configured in LANGS else DEFAULT_LANG
