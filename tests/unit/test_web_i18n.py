"""The admin page's strings: both languages carry the same keys and placeholders, and the
language is chosen as documented (?lang= > cookie > Accept-Language > zh)."""

from __future__ import annotations

import string

from amrita_memory_pg.web.i18n import EN, ZH, pick_lang, translator


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_both_languages_have_the_same_keys_and_placeholders() -> None:
    assert set(ZH) == set(EN)
    assert {k: _fields(v) for k, v in ZH.items()} == {k: _fields(v) for k, v in EN.items()}


def test_the_language_choice() -> None:
    assert pick_lang(None, None, None) == "zh"
    assert pick_lang(None, None, "en-US,en;q=0.9") == "en"
    assert pick_lang(None, None, "fr-FR,zh-CN;q=0.8,en;q=0.5") == "zh"
    assert pick_lang(None, "en", "zh-CN") == "en"
    assert pick_lang("zh", "en", "en") == "zh"
    assert pick_lang("xx", None, None) == "zh"


def test_translator_formats_and_falls_back() -> None:
    t = translator("en")
    assert t("memories.title", key="global") == "Memories of global"
    assert translator("zh")("memories.title", key="global") == "global 的记忆"
    assert t("no.such.key") == "no.such.key"
