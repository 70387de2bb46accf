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
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.settings import Settings, load_settings

T = TypeVar("T")


class CliState:
    """Options of the top-level group, resolved lazily so errors come out as one line."""

    def __init__(self, config: Path | None, debug: bool) -> None:
        self.config = config
        self.debug = debug
        self._settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config)
        return self._settings


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async click callback in a fresh event loop, its writes the operator's."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        async def as_operator() -> T:
            # The change history names the operator of every write a command makes
            # (issue 17); scoped to this command's loop, never the calling process.
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
    CLI writes no key the admin page or ``/memory`` would then refuse."""

    name = "key"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from amrita_memory_pg.domain.keys import check_partition_key
        from amrita_memory_pg.domain.validation import InvalidInput

        try:
            return check_partition_key(str(value))
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
#: the widest integer a statement takes (PostgreSQL bigint) and the int columns' limit
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
