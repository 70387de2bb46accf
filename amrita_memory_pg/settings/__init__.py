"""One settings model: the TOML file, the environment, and every default in one place.

The reference plugin's keys keep their names (``per_session_memory_limit``, ``[decay]``,
``[subconscious]`` and its ``idle_*`` keys; the environment variables ``VECTOR_DB_*``,
``EMBEDDING_*``, ``EMBED_*``, ``REEMBED_*``), so an existing ``config.toml`` and ``.env``
work unchanged. Our own options sit beside them. Any key can also be set through
``AMRITA_MEMORY_<SECTION>__<KEY>`` (or ``AMRITA_MEMORY_<KEY>`` at the top level).

:class:`Settings` is a pydantic-settings ``BaseSettings``. Its sources, highest first:
init kwargs (explicit overrides, the NoneBot plugin's config), the ``AMRITA_MEMORY_*``
environment (pydantic-settings' env source), the reference's environment names (a small
source: they carry no common prefix), the TOML file (``TomlConfigSettingsSource``), the
defaults. An unknown key or a value that is not allowed raises :class:`ConfigError` with
one sentence naming the key, the value, where it came from and what is allowed.

The package is split by reason, each module importing only those above it in this list:
``base`` (what sections share), ``sections``, ``subconscious`` and ``backup`` (the fields),
``keys`` (settings paths ↔ variable names), ``legacy`` (the reference's variable names),
``loader`` (the environment and TOML sources, the config file), ``explain`` (the error
sentence), ``model`` (:class:`Settings`, :func:`load_settings`), ``render`` (``config
show`` and docs/configuration.md) and ``bot`` (a NoneBot bot's ``.env`` and driver
config, read the same way by the plugin and the CLI). Import the public names from here.
"""

from __future__ import annotations

from amrita_memory_pg.settings.backup import BackupSettings
from amrita_memory_pg.settings.base import ACCEPTED_ONLY
from amrita_memory_pg.settings.keys import ENV_PREFIX, ENV_RESERVED, env_name, unknown_env_variable
from amrita_memory_pg.settings.legacy import LEGACY_ENV
from amrita_memory_pg.settings.loader import DEFAULT_CONFIG_PATHS, find_config_file
from amrita_memory_pg.settings.model import (
    LOOP_MODEL_HOWTO,
    Settings,
    build_settings,
    env_path,
    load_settings,
    loop_endpoint_label,
    loop_llm,
)
from amrita_memory_pg.settings.render import (
    accepted_only,
    iter_fields,
    redacted_dump,
    render_reference,
)
from amrita_memory_pg.settings.sections import (
    MIN_TIMEOUT_MARGIN,
    DatabaseSettings,
    DecaySettings,
    EmbeddingSettings,
    ExtractionSettings,
    InjectionSettings,
    LlmSettings,
    ObservabilitySettings,
    ProfileSettings,
    RetrievalSettings,
    TrailSettings,
    VectorDbSettings,
    WebSettings,
)
from amrita_memory_pg.settings.subconscious import TARGET_KEY, SubconsciousSettings

__all__ = [
    "ACCEPTED_ONLY",
    "DEFAULT_CONFIG_PATHS",
    "ENV_PREFIX",
    "ENV_RESERVED",
    "LEGACY_ENV",
    "LOOP_MODEL_HOWTO",
    "MIN_TIMEOUT_MARGIN",
    "TARGET_KEY",
    "BackupSettings",
    "DatabaseSettings",
    "DecaySettings",
    "EmbeddingSettings",
    "ExtractionSettings",
    "InjectionSettings",
    "LlmSettings",
    "ObservabilitySettings",
    "ProfileSettings",
    "RetrievalSettings",
    "Settings",
    "SubconsciousSettings",
    "TrailSettings",
    "VectorDbSettings",
    "WebSettings",
    "accepted_only",
    "build_settings",
    "env_name",
    "env_path",
    "find_config_file",
    "iter_fields",
    "load_settings",
    "loop_endpoint_label",
    "loop_llm",
    "redacted_dump",
    "render_reference",
    "unknown_env_variable",
]
