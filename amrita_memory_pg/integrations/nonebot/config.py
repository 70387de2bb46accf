"""NoneBot configuration → :class:`~amrita_memory_pg.settings.Settings`.

NoneBot reads ``.env`` into its driver config: unknown keys are lower-cased, JSON values
decoded, and ``A__B`` keys exploded into nested dicts. We take every ``amrita_memory_*``
key (plus the reference's ``EMBEDDING_*``, ``DATABASE_URL``, ``LLM_*``… names), map it to
its settings path and hand the decoded values to ``Settings`` as init kwargs, so the
plugin, the CLI and the docs share one set of names — and an unknown ``amrita_memory_*``
key fails with the same one-sentence :class:`~amrita_memory_pg.domain.errors.ConfigError`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The mapping itself lives beside the settings: the CLI reads a bot's .env through it.
from amrita_memory_pg.settings.bot import settings_from_driver_config, values_from_driver_config

__all__ = ["Config", "settings_from_driver_config", "values_from_driver_config"]


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
