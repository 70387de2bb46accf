"""The admin page's strings: both languages carry the same keys and placeholders, and the
language is chosen as documented (?lang= > cookie > the language setting; zh by default)."""

from __future__ import annotations

import string
import tomllib
from pathlib import Path

import amrita_memory_pg.web
from amrita_memory_pg.web.i18n import DEFAULT_LANG, EN, LANGS, STRINGS, ZH, pick_lang, translator

LOCALES = Path(amrita_memory_pg.web.__file__).parent / "locales"


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_both_languages_have_the_same_keys_and_placeholders() -> None:
    assert set(ZH) == set(EN)
    assert {k: _fields(v) for k, v in ZH.items()} == {k: _fields(v) for k, v in EN.items()}


def test_every_locale_file_parses_and_holds_every_key_with_its_placeholders() -> None:
    """The strings are data files: each parses as TOML (a duplicate key is a parse error),
    holds only strings, and has every key any language has, with the same placeholders."""
    assert sorted(p.stem for p in LOCALES.glob("*.toml")) == sorted(LANGS)
    tables = {
        lang: tomllib.loads((LOCALES / f"{lang}.toml").read_text(encoding="utf-8"))
        for lang in LANGS
    }
    every_key = set().union(*tables.values())
    assert len(every_key) > 300
    for lang, table in tables.items():
        assert every_key - set(table) == set(), f"{lang}.toml lacks these keys"
        assert all(isinstance(v, str) and v for v in table.values()), lang
        assert {k: _fields(v) for k, v in table.items()} == {
            k: _fields(v) for k, v in tables[DEFAULT_LANG].items()
        }, f"{lang}.toml: placeholders differ from {DEFAULT_LANG}.toml"
        assert table == STRINGS[lang]  # what the loader serves is the file


def test_the_language_choice() -> None:
    # the setting decides, not the browser's Accept-Language; a person's choice wins
    assert pick_lang(None, None) == "zh"
    assert pick_lang(None, None, "en") == "en"
    assert pick_lang(None, "en", "zh") == "en"
    assert pick_lang("zh", "en", "en") == "zh"
    assert pick_lang("xx", None, "zh") == "zh"
    assert pick_lang("xx", "yy", "en") == "en"


def test_translator_formats_and_falls_back() -> None:
    t = translator("en")
    assert t("memories.title", key="global") == "Memories of global"
    assert translator("zh")("memories.title", key="global") == "global 的记忆"
    assert t("no.such.key") == "no.such.key"
