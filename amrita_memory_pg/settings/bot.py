"""A NoneBot bot's configuration → :class:`Settings`, for the plugin and the CLI alike.

NoneBot reads ``.env`` and ``.env.<ENVIRONMENT>`` into its driver config: names
lower-cased, values JSON-decoded, the process environment over the files. The plugin
takes every ``amrita_memory_*`` key of that config (plus the reference's
``EMBEDDING_*``, ``DATABASE_URL``, ``LLM_*``… names), maps it to its settings path and
hands the values to ``Settings`` as init kwargs. The CLI reads the same files the same
way (:func:`read_bot_env`) and goes through the same mapping, so run in the bot's
folder it resolves the model the bot uses: a CLI that ignored ``.env`` re-embedded an
import with the default model and the bot then refused to start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.settings.keys import ENV_PREFIX, ENV_RESERVED, unknown_env_variable
from amrita_memory_pg.settings.legacy import LEGACY_ENV
from amrita_memory_pg.settings.model import Settings, build_settings, env_path

PREFIX = ENV_PREFIX.lower()
_LEGACY = {name.lower(): name for name in LEGACY_ENV}
CONFIG_KEY = "amrita_memory_config"
#: NoneBot's environment name when neither the process nor ``.env`` sets ``ENVIRONMENT``
DEFAULT_ENVIRONMENT = "prod"


@dataclass(frozen=True, slots=True)
class BotEnvironment:
    """The driver-config values a bot started in a folder would see, and the files read."""

    values: dict[str, Any]
    files: tuple[Path, ...]


def _decode(value: str) -> Any:
    """A value as NoneBot decodes an extra key: JSON when it parses, else the text."""
    stripped = value.strip()
    if not stripped:
        return value
    try:
        return json.loads(stripped)
    except ValueError:
        return value


def read_bot_env(directory: Path, environ: Mapping[str, str]) -> BotEnvironment:
    """``.env`` then ``.env.<ENVIRONMENT>`` of ``directory``, as ``nonebot.init()`` reads
    them: ``ENVIRONMENT`` from the process, else ``.env``, else ``prod``; for each name
    of the files the process environment's value wins; names lower-cased."""
    from dotenv import dotenv_values

    def read(path: Path) -> dict[str, str]:
        try:
            values = dotenv_values(path, encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        return {k.lower(): v for k, v in values.items() if v is not None}

    process = {k.lower(): v for k, v in environ.items()}
    files: list[Path] = []
    found: dict[str, str] = {}
    base = directory / ".env"
    if base.is_file():
        found.update(read(base))
        files.append(base)
    name = process.get("environment") or found.get("environment") or DEFAULT_ENVIRONMENT
    named = directory / f".env.{name}"
    if named.is_file():
        found.update(read(named))
        files.append(named)
    values = {key: _decode(process.get(key, value)) for key, value in found.items()}
    return BotEnvironment(values, tuple(files))


def _entries(values: Mapping[str, Any]) -> Iterator[tuple[str, tuple[str, ...], Any]]:
    """(environment name, settings path, decoded value) of each of our keys.

    Raises :class:`~amrita_memory_pg.domain.errors.ConfigError` for an ``amrita_memory_*`` key
    that is no setting.
    """
    for key, value in values.items():
        lower = str(key).lower()
        if value is None:
            continue
        if lower.startswith(PREFIX):
            if isinstance(value, Mapping) and "__" not in lower:
                # `AMRITA_MEMORY_DECAY__ENABLED=false` arrives as {"amrita_memory_decay": {"enabled": False}}
                named = [(f"{lower}__{sub}".upper(), v) for sub, v in value.items()]
            else:
                named = [(lower.upper(), value)]
            for name, item in named:
                if name in ENV_RESERVED or item is None:
                    continue
                path = env_path(name)
                if path is None:
                    raise unknown_env_variable(name)
                yield name, path, item
        elif lower in _LEGACY:
            yield _LEGACY[lower], LEGACY_ENV[_LEGACY[lower]], value


def _ordered(values: Mapping[str, Any]) -> list[tuple[str, tuple[str, ...], Any]]:
    """Our entries with every ``AMRITA_MEMORY_*`` name after the reference names: when
    both set one key, the generic name wins, as in the environment."""
    return sorted(_entries(values), key=lambda entry: entry[0].startswith(ENV_PREFIX))


def values_from_driver_config(values: Mapping[str, Any]) -> dict[str, Any]:
    """Our keys of a NoneBot config dump as nested settings values (init kwargs)."""
    tree: dict[str, Any] = {}
    for _, path, value in _ordered(values):
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return tree


def config_file_of(values: Mapping[str, Any]) -> str | None:
    """The TOML file a driver config names (``AMRITA_MEMORY_CONFIG``), if any."""
    found = next((v for k, v in values.items() if str(k).lower() == CONFIG_KEY and v), None)
    return str(found) if found else None


def settings_from_driver_config(
    values: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    *,
    config_file: str | os.PathLike[str] | None = None,
) -> Settings:
    """Settings from NoneBot's config on top of the process environment.

    ``config_file`` (the CLI's ``--config``) wins over the file the config names.
    Raises :class:`~amrita_memory_pg.domain.errors.ConfigError` for an unknown key or bad
    value; the sentence names the key as it is written in ``.env``.
    """
    labels = {path: f"environment {name}" for name, path, _ in _ordered(values)}
    return build_settings(
        values_from_driver_config(values),
        labels=labels,
        config_file=config_file if config_file is not None else config_file_of(values),
        env=os.environ if environ is None else environ,
    )
