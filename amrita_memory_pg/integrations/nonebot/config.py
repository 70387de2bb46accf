"""NoneBot configuration → :class:`~amrita_memory_pg.settings.Settings`.

NoneBot reads ``.env`` into its driver config: unknown keys are lower-cased, JSON values
decoded, and ``A__B`` keys exploded into nested dicts. We take every ``amrita_memory_*``
key (plus the reference's ``EMBEDDING_*``, ``DATABASE_URL``, ``LLM_*``… names), map it to
its settings path and hand the decoded values to ``Settings`` as init kwargs, so the
plugin, the CLI and the docs share one set of names — and an unknown ``amrita_memory_*``
key fails with the same one-sentence :class:`~amrita_memory_pg.domain.errors.ConfigError`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from amrita_memory_pg.settings import (
    ENV_PREFIX,
    ENV_RESERVED,
    LEGACY_ENV,
    Settings,
    build_settings,
    env_path,
    unknown_env_variable,
)

PREFIX = ENV_PREFIX.lower()
_LEGACY = {name.lower(): name for name in LEGACY_ENV}
_CONFIG_KEY = "amrita_memory_config"


class Config(BaseModel):
    """The plugin's NoneBot config (``PluginMetadata(config=…)``).

    Only the file path is declared here; every other ``AMRITA_MEMORY_<KEY>`` /
    ``AMRITA_MEMORY_<SECTION>__<KEY>`` key is validated by ``Settings`` (see
    docs/configuration.md for the full list).
    """

    model_config = ConfigDict(extra="ignore")

    amrita_memory_config: str | None = Field(
        None, description="TOML config file (default: config/amrita_memory_pg/config.toml)."
    )


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


def settings_from_driver_config(
    values: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> Settings:
    """Settings from NoneBot's config on top of the process environment (like the CLI).

    Raises :class:`~amrita_memory_pg.domain.errors.ConfigError` for an unknown key or bad value;
    the sentence names the key as it is written in ``.env``.
    """
    labels = {path: f"environment {name}" for name, path, _ in _ordered(values)}
    config_file = next((v for k, v in values.items() if str(k).lower() == _CONFIG_KEY and v), None)
    return build_settings(
        values_from_driver_config(values),
        labels=labels,
        config_file=str(config_file) if config_file else None,
        env=os.environ if environ is None else environ,
    )
