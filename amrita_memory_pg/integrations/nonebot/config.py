"""NoneBot configuration → :class:`~amrita_memory_pg.settings.Settings`.

NoneBot reads ``.env`` into its driver config: unknown keys are lower-cased, JSON values
decoded, and ``A__B`` keys exploded into nested dicts. We undo that and hand every
``amrita_memory_*`` key (plus the reference's ``EMBEDDING_*``, ``DATABASE_URL``, ``LLM_*``…
names) to :func:`load_settings` under its environment name, so the plugin, the CLI and
the docs share one set of names — and an unknown ``amrita_memory_*`` key fails with the
same one-sentence :class:`~amrita_memory_pg.domain.errors.ConfigError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from amrita_memory_pg.settings import ENV_PREFIX, LEGACY_ENV, Settings, load_settings

PREFIX = ENV_PREFIX.lower()
_LEGACY = {name.lower(): name for name in LEGACY_ENV}


class Config(BaseModel):
    """The plugin's NoneBot config (``PluginMetadata(config=…)``).

    Only the file path is declared here; every other ``AMRITA_MEMORY_<KEY>`` /
    ``AMRITA_MEMORY_<SECTION>__<KEY>`` key is validated by ``load_settings`` (see
    docs/configuration.md for the full list).
    """

    model_config = ConfigDict(extra="ignore")

    amrita_memory_config: str | None = Field(
        None, description="TOML config file (default: config/amrita_memory_pg/config.toml)."
    )


def _as_env(value: Any) -> str:
    """NoneBot decoded the value as JSON; write it back the way the environment spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple | set | frozenset | dict):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return json.dumps(items, ensure_ascii=False)
    return str(value)


def env_from_driver_config(values: Mapping[str, Any]) -> dict[str, str]:
    """Our keys of a NoneBot config dump, under their environment variable names."""
    env: dict[str, str] = {}
    for key, value in values.items():
        lower = str(key).lower()
        if value is None:
            continue
        if lower.startswith(PREFIX):
            if isinstance(value, Mapping) and "__" not in lower:
                # `AMRITA_MEMORY_DECAY__ENABLED=false` arrives as {"amrita_memory_decay": {"enabled": False}}
                for sub, sub_value in value.items():
                    if sub_value is not None:
                        env[f"{lower.upper()}__{str(sub).upper()}"] = _as_env(sub_value)
            else:
                env[lower.upper()] = _as_env(value)
        elif lower in _LEGACY:
            env[_LEGACY[lower]] = _as_env(value)
    return env


def settings_from_driver_config(
    values: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> Settings:
    """Settings from NoneBot's config on top of the process environment (like the CLI).

    Raises :class:`~amrita_memory_pg.domain.errors.ConfigError` for an unknown key or bad value.
    """
    base = dict(os.environ if environ is None else environ)
    return load_settings(env={**base, **env_from_driver_config(values)})
