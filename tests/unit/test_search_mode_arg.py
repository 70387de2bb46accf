"""``/memory … search [mode=X] <关键词>``: the mode option of the command."""

from __future__ import annotations

from amrita_memory_pg.commands.memory_command import search_mode


def test_no_mode_is_the_configured_default() -> None:
    assert search_mode("小宋 考试") == (None, "小宋 考试", None)
    assert search_mode("model=3 考试") == (None, "model=3 考试", None)


def test_each_mode_is_taken_and_removed_from_the_query() -> None:
    for mode in ("vector", "keyword", "hybrid"):
        assert search_mode(f"mode={mode} 小宋 考试") == (mode, "小宋 考试", None)
    assert search_mode("MODE=Keyword 2046") == ("keyword", "2046", None)
    assert search_mode("mode=keyword") == ("keyword", "", None)  # then: asked for keywords


def test_an_unknown_mode_is_refused_with_the_choices() -> None:
    mode, _query, refused = search_mode("mode=fuzzy 小宋")
    assert mode is None and refused is not None
    assert "fuzzy" in refused and "mode=hybrid" in refused and "mode=keyword" in refused
