"""The admin page's UI strings, Chinese (the default, like the bot) and English.

The strings are data, one TOML file per language in ``web/locales/`` (shipped in the
wheel with the package), read once at import. A page picks the language with ``?lang=``
(remembered in a cookie), else the cookie, else the browser's Accept-Language, else
Chinese. ``t(key, **values)`` formats with ``str.format``; a key missing in English falls
back to Chinese, and a unit test (tests/unit/test_web_i18n.py) keeps every file on the
same keys and placeholders. Pages added by other modules add their keys to every file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from importlib.resources import files
from typing import Any

LANGS = ("zh", "en")
DEFAULT_LANG = "zh"
LANG_COOKIE = "amp_admin_lang"


def load_locale(lang: str) -> dict[str, str]:
    """The strings of ``locales/<lang>.toml``; a value that is not a string is a broken
    file, refused with its key (a TOML syntax error names its line)."""
    resource = files("amrita_memory_pg.web") / "locales" / f"{lang}.toml"
    table = tomllib.loads(resource.read_text(encoding="utf-8"))
    wrong = sorted(key for key, value in table.items() if not isinstance(value, str))
    if wrong:
        raise ValueError(f"locales/{lang}.toml: not a string: {', '.join(wrong)}")
    return table


ZH: dict[str, str] = load_locale("zh")
EN: dict[str, str] = load_locale("en")
STRINGS: Mapping[str, Mapping[str, str]] = {"zh": ZH, "en": EN}


def translator(lang: str) -> Callable[..., str]:
    """``t(key, **values)`` for ``lang`` (Chinese for a key English lacks; the key itself
    for one nobody defines, so a missing string shows instead of failing the page)."""
    table = STRINGS.get(lang, ZH)

    def t(name: str, /, **values: Any) -> str:
        text = table.get(name) or ZH.get(name) or name
        return text.format(**values) if values else text

    return t


def pick_lang(query: str | None, cookie: str | None, accept_language: str | None) -> str:
    """``?lang=`` > cookie > the first supported language in Accept-Language > Chinese."""
    for choice in (query, cookie):
        if choice in LANGS:
            return choice
    for part in (accept_language or "").split(","):
        tag = part.split(";")[0].strip().lower()
        base = tag.split("-")[0]
        if base in LANGS:
            return base
    return DEFAULT_LANG
