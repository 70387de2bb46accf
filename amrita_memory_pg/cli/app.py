"""The ``amrita-memory`` click group and what every command shares.

Commands live in :mod:`amrita_memory_pg.cli.main` (database, status, sweep, config),
:mod:`amrita_memory_pg.cli.ops` (model changes, backups, keys) and
:mod:`amrita_memory_pg.cli.knowledge` (knowledge base, grants); all attach to ``cli``.
"""

from __future__ import annotations

import asyncio
import functools
import getpass
import logging
import os
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.i18n import DEFAULT_LANG, LANGS, Catalog, known_lang
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.settings.bot import (
    BotEnvironment,
    config_file_of,
    read_bot_env,
    settings_from_driver_config,
)

T = TypeVar("T")

#: the command's words in both languages (amrita_memory_pg/locales/): help, click's own
#: messages and every line it prints, through the same mechanism as the admin page's
TEXT = Catalog("amrita_memory_pg")
#: the language of this run, chosen by :func:`set_language` before the arguments are parsed
_language = [DEFAULT_LANG]


def language() -> str:
    return _language[0]


def tr(key: str, /, **values: Any) -> str:
    """``key``'s text in this run's language (``cli.*`` keys: both files have each)."""
    return TEXT.translator(_language[0])(key, **values)


def say(key: str, /, *, err: bool = False, **values: Any) -> None:
    """Print ``key``'s text in this run's language."""
    click.echo(tr(key, **values), err=err)


def table_counts(counts: Mapping[str, int]) -> str:
    """Rows per table of a backup or a restore in words (``table.*``), empty tables left out."""
    parts = [f"{tr('table.' + table)} {rows}" for table, rows in counts.items() if rows]
    return tr("list.sep").join(parts) or "0"


def chosen_language(args: list[str], environ: Mapping[str, str]) -> str:
    """The language of a run: ``--lang`` on the command line, else the ``language``
    setting as the bot in this folder resolves it (its .env, the environment, the config
    file), else Chinese. Read before click parses anything: the help is in it too."""
    config: Path | None = None
    for n, arg in enumerate(args):
        name, sep, value = arg.partition("=")
        if not sep and n + 1 < len(args):
            value = args[n + 1]
        if name == "--lang" and known_lang(value):
            return str(known_lang(value))
        if name == "--config" and value:
            config = Path(value)
    try:
        return CliState(config, False).settings.language
    except Exception:  # a broken configuration: said in its own words when a command loads it
        return known_lang(environ.get("AMRITA_MEMORY_LANGUAGE")) or DEFAULT_LANG


def set_language(lang: str, root: click.Command) -> None:
    """Speak ``lang`` in this run: the commands' help, click's own messages, the output."""
    _language[0] = lang if lang in LANGS else DEFAULT_LANG
    table = TEXT.strings[DEFAULT_LANG] if _language[0] == "zh" else {}
    _localize_help(root, (), table)
    _localize_click(table)


def _localize_help(command: click.Command, path: tuple[str, ...], zh: Mapping[str, str]) -> None:
    """Each command's and option's help in the run's language: the English is the code's
    (kept on first use), the Chinese ``help.<path>`` / ``opt.<path>.<option>``."""
    name = ".".join(("help", *path))
    english = command.__dict__.setdefault("_help_en", command.help)
    command.help = zh.get(name, english)
    command.short_help = None
    command._help_option = None  # click caches the --help option with its text
    for param in command.params:
        if isinstance(param, click.Option):
            original = param.__dict__.setdefault("_help_en", param.help)
            param.help = zh.get(".".join(("opt", *path, param.name or "")), original)
    if isinstance(command, click.Group):
        for sub_name, sub in command.commands.items():
            _localize_help(sub, (*path, sub_name), zh)


#: click's modules that translate their messages with gettext's ``_`` / ``ngettext``
_CLICK_MODULES = ("core", "decorators", "exceptions", "formatting", "parser", "termui", "types")


def _localize_click(zh: Mapping[str, str]) -> None:
    """click's own words (Usage:, Options, Error: …) from ``click.*`` keys: click asks
    gettext, which reads only compiled catalogue files, so its ``_`` is pointed here
    for this run (English: gettext's again)."""
    import gettext
    import importlib

    def single(message: str) -> str:
        return zh.get(f"click.{message}", message)

    def plural(one: str, many: str, n: int) -> str:
        return single(one if n == 1 else many)

    for module_name in _CLICK_MODULES:
        module = importlib.import_module(f"click.{module_name}")
        if hasattr(module, "_"):
            setattr(module, "_", single if zh else gettext.gettext)  # noqa: B010 (a module's name)
        if hasattr(module, "ngettext"):
            setattr(module, "ngettext", plural if zh else gettext.ngettext)  # noqa: B010


class CliState:
    """Options of the top-level group, resolved lazily so errors come out as one line."""

    def __init__(self, config: Path | None, debug: bool) -> None:
        self.config = config
        self.debug = debug
        self._settings: Settings | None = None
        self._bot_env: BotEnvironment | None = None

    @property
    def bot_env(self) -> BotEnvironment:
        """The environment the bot in the working directory sees (``.env`` files included)."""
        if self._bot_env is None:
            self._bot_env = read_bot_env(Path.cwd(), os.environ)
        return self._bot_env

    @property
    def settings(self) -> Settings:
        """The bot's settings: the same ``.env`` files, environment and config file it reads."""
        if self._settings is None:
            self._settings = self.load()
        return self._settings

    def load(self, **overrides: Any) -> Settings:
        """Settings as the bot in the working directory resolves them, ``overrides``
        (settings paths with ``__``) on top; ``--config`` wins over the file .env names."""
        values = dict(self.bot_env.values)
        for name, value in overrides.items():
            values[f"amrita_memory_{name}"] = value
        return settings_from_driver_config(values, os.environ, config_file=self.config)

    def sources(self) -> str:
        """Where the settings came from, for a command that is about to spend money or time."""
        from amrita_memory_pg.settings import find_config_file

        files = [str(p) for p in self.bot_env.files]
        config = find_config_file(
            self.config if self.config is not None else config_file_of(self.bot_env.values),
            os.environ,
        )
        if config is not None:
            files.append(str(config))
        where = tr("cli.sources.sep").join(files) if files else tr("cli.sources.none")
        return tr("cli.sources.where", files=where, cwd=Path.cwd())


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async click callback in a fresh event loop, its writes the operator's."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        async def as_operator() -> T:
            # The change history names the operator of every write a command makes;
            # scoped to this command's loop, never the calling process.
            with acting(Actor("person", f"cli:{getpass.getuser()}")):
                return await fn(*args, **kwargs)

        return asyncio.run(as_operator())

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config",
    type=click.Path(path_type=Path),
    default=None,
    help="TOML config file (default: AMRITA_MEMORY_CONFIG or config/amrita_memory_pg/config.toml).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.version_option(
    package_name="amrita-memory-pg",
    prog_name="amrita-memory",
    message="%(prog)s %(version)s",
    help="Show the installed version (CHANGELOG.md says what each one brought) and exit.",
)
@click.option(
    "--lang",
    type=click.Choice(LANGS),
    default=None,
    help="Language of this command: zh or en (default: the language setting, "
    "AMRITA_MEMORY_LANGUAGE).",
)
@click.pass_context
def cli(ctx: click.Context, config: Path | None, debug: bool, lang: str | None) -> None:
    """Long-term memory for chat bots, in PostgreSQL + pgvector."""
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = CliState(config, debug)


class PartitionKeyType(click.ParamType):  # type: ignore[type-arg]
    """A partition key argument through the one key rule (domain/keys.py), so that the
    CLI writes no key the admin page or ``/memory`` would then refuse. An old-style key
    (``user_10004``) is first resolved to the current one, and stderr says so: it used
    to find nothing silently."""

    name = "key"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from amrita_memory_pg.domain.keys import check_partition_key, legacy_key_now
        from amrita_memory_pg.domain.validation import InvalidInput

        text = str(value)
        now = legacy_key_now(text[:MAX_TYPED_KEY])
        if now is not None:
            say("cli.key.legacy", typed=text.strip(), now=now, err=True)
            text = now
        try:
            return check_partition_key(text)
        except InvalidInput as exc:
            self.fail(exc.said(language()), param, ctx)


class TextType(click.ParamType):  # type: ignore[type-arg]
    """Free text checked by the one validation: at most ``max_chars``, storable."""

    name = "text"

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from amrita_memory_pg.domain.validation import InvalidInput, check_text

        try:
            return check_text(str(value), max_chars=self.max_chars)
        except InvalidInput as exc:
            self.fail(exc.said(language()), param, ctx)


KEY = PartitionKeyType()
#: what of a typed key is looked at for an old-style key (longer ones fail the key rule)
MAX_TYPED_KEY = 1000
#: the widest integer a statement takes (PostgreSQL bigint) and the int columns' limit
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
