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
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.settings.bot import (
    BotEnvironment,
    config_file_of,
    read_bot_env,
    settings_from_driver_config,
)

T = TypeVar("T")


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
        where = "、".join(files) if files else "没有 .env 和配置文件，只有环境变量与默认值"
        return f"{where}（工作目录 {Path.cwd()}）"


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
@click.pass_context
def cli(ctx: click.Context, config: Path | None, debug: bool) -> None:
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
            click.echo(f"{text.strip()} 是旧格式的分区键，现为 {now}（按 {now} 处理）", err=True)
            text = now
        try:
            return check_partition_key(text)
        except InvalidInput as exc:
            self.fail(exc.reason, param, ctx)


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
            self.fail(exc.reason, param, ctx)


KEY = PartitionKeyType()
#: what of a typed key is looked at for an old-style key (longer ones fail the key rule)
MAX_TYPED_KEY = 1000
#: the widest integer a statement takes (PostgreSQL bigint) and the int columns' limit
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
