"""Strings a person reads, in Chinese (the default, like the bot) and English: one mechanism
for every surface that speaks to a person in words of its own — the admin page
(``web/locales/``) and the ``amrita-memory`` command (``locales/``, with the operator
reports it prints).

The strings are data, one TOML file per language beside the package that speaks them
(shipped in the wheel), read once. ``Catalog(package).translator(lang)`` gives
``t(key, **values)``, formatted with ``str.format``; a key missing in English falls back to
Chinese, an unknown key shows itself (a missing string is visible, never a crash), and
tests keep each catalogue's files on the same keys and placeholders.

Which language: the one setting ``language`` (``AMRITA_MEMORY_LANGUAGE``; default Chinese)
for the CLI and the page alike; the page's own language link (``?lang=``, kept in a
cookie) is one person's choice on top of it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from importlib.resources import files
from typing import Any, Final, Literal

Lang = Literal["zh", "en"]
LANGS: Final = ("zh", "en")
DEFAULT_LANG: Final = "zh"
#: what ``t(key)`` is
Translator = Callable[..., str]


def load_locale(package: str, lang: str) -> dict[str, str]:
    """The strings of ``<package>/locales/<lang>.toml``; a value that is not a string is a
    broken file, refused with its key (a TOML syntax error names its line)."""
    resource = files(package) / "locales" / f"{lang}.toml"
    table = tomllib.loads(resource.read_text(encoding="utf-8"))
    wrong = sorted(key for key, value in table.items() if not isinstance(value, str))
    if wrong:
        raise ValueError(f"{package} locales/{lang}.toml: not a string: {', '.join(wrong)}")
    return table


class Catalog:
    """The strings of one package in every language, loaded once."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.strings: Mapping[str, Mapping[str, str]] = {
            lang: load_locale(package, lang) for lang in LANGS
        }

    def translator(self, lang: str) -> Translator:
        """``t(key, **values)`` for ``lang`` (Chinese for a key English lacks; the key
        itself for one nobody defines, so a missing string shows instead of failing)."""
        zh = self.strings[DEFAULT_LANG]
        table = self.strings.get(lang, zh)

        def t(name: str, /, **values: Any) -> str:
            text = table.get(name) or zh.get(name) or name
            return text.format(**values) if values else text

        return t


def known_lang(value: str | None) -> Lang | None:
    """``value`` when it names a language we speak (``zh``, ``en``, ``zh-CN``…), else None."""
    base = (value or "").strip().lower().replace("_", "-").split("-")[0]
    if base == "zh":
        return "zh"
    if base == "en":
        return "en"
    return None
