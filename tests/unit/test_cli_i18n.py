"""The amrita-memory command in both languages: every command and option has its Chinese
help (the English is the code's own), every line it prints has both texts with the same
placeholders, and nothing is left over (amrita_memory_pg/locales/)."""

from __future__ import annotations

import re
import string

import click
import pytest

from amrita_memory_pg.cli.app import TEXT, _localize_click, cli, set_language, tr
from amrita_memory_pg.cli.main import _register_commands

#: keys only Chinese needs: the help (English in the code) and click's own messages
ZH_ONLY = ("help", "opt.", "click.")


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def _commands() -> list[tuple[tuple[str, ...], click.Command]]:
    _register_commands()
    found: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        found.append((path, command))
        if isinstance(command, click.Group):
            for name, sub in sorted(command.commands.items()):
                walk(sub, (*path, name))

    walk(cli, ())
    return found


def test_every_printed_line_has_both_languages_with_the_same_placeholders() -> None:
    zh, en = TEXT.strings["zh"], TEXT.strings["en"]
    shared = {k for k in zh if not k.startswith(ZH_ONLY)}
    assert shared == set(en), "a key of one language file is missing from the other"
    assert {k: _fields(zh[k]) for k in shared} == {k: _fields(en[k]) for k in shared}
    assert all(v.strip() for v in (*zh.values(), *en.values()))


def test_every_command_and_option_has_its_chinese_help_and_no_key_is_stale() -> None:
    zh = TEXT.strings["zh"]
    wanted: set[str] = set()
    for path, command in _commands():
        wanted.add(".".join(("help", *path)))
        for param in command.params:
            if isinstance(param, click.Option) and param.__dict__.get("_help_en", param.help):
                wanted.add(".".join(("opt", *path, param.name or "")))
    present = {k for k in zh if k.startswith(("help", "opt."))}
    assert wanted - present == set(), "commands or options without Chinese help"
    assert present - wanted == set(), "help for commands or options that no longer exist"


def test_chinese_help_is_chinese_and_english_help_comes_back() -> None:
    try:
        set_language("zh", cli)
        for path, command in _commands():
            assert re.search(r"[\u4e00-\u9fff]", command.help or ""), path
        set_language("en", cli)
        assert cli.help == "Long-term memory for chat bots, in PostgreSQL + pgvector."
        memory = cli.commands["memory"]
        assert isinstance(memory, click.Group)
        assert (memory.commands["add"].help or "").startswith("Add a manual memory")
    finally:
        set_language("en", cli)


@pytest.mark.parametrize("message", ["Usage:", "Options", "Missing argument", "Aborted!"])
def test_clicks_own_words_follow_the_language(message: str) -> None:
    import click.core as core

    try:
        _localize_click(TEXT.strings["zh"])
        assert core._(message) == TEXT.strings["zh"][f"click.{message}"]
        _localize_click({})
        assert core._(message) == message
    finally:
        _localize_click({})


def test_clicks_messages_we_translate_are_clicks() -> None:
    """A message click no longer has would translate nothing: each key is in its source."""
    from pathlib import Path

    source = "".join(
        (Path(click.__file__).parent / f"{m}.py").read_text(encoding="utf-8")
        for m in ("core", "decorators", "exceptions", "formatting", "parser", "termui", "types")
    )
    for key in (k for k in TEXT.strings["zh"] if k.startswith("click.")):
        message = key.removeprefix("click.")
        assert repr(message)[1:-1] in source or message in source, message


def test_tr_speaks_the_runs_language() -> None:
    try:
        set_language("zh", cli)
        assert tr("cli.memory.hits", n=2) == "命中 2 条"
        set_language("en", cli)
        assert tr("cli.memory.hits", n=2) == "2 hits"
    finally:
        set_language("en", cli)


def test_the_chinese_legend_is_the_one_every_surface_shows() -> None:
    from amrita_memory_pg.domain.decay import SCORE_LEGEND

    assert TEXT.strings["zh"]["cli.memory.legend"] == SCORE_LEGEND
