"""Settings paths (``("decay", "enabled")``) and their environment variable names.

The functions that need the top-level keys take the settings class as an argument, so
that this module sits below :mod:`amrita_memory_pg.settings.model`, which uses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.settings.backup import BackupSettings
from amrita_memory_pg.settings.base import Section
from amrita_memory_pg.settings.sections import (
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
from amrita_memory_pg.settings.subconscious import SubconsciousSettings

ENV_PREFIX = "AMRITA_MEMORY_"
#: Environment variables with the prefix that are not settings keys.
ENV_RESERVED = frozenset({"AMRITA_MEMORY_CONFIG", "AMRITA_MEMORY_TEST_DSN"})
#: Each section of the top-level model, by its key.
SECTIONS: dict[str, type[Section]] = {
    "decay": DecaySettings,
    "subconscious": SubconsciousSettings,
    "profile": ProfileSettings,
    "embedding": EmbeddingSettings,
    "vector_db": VectorDbSettings,
    "database": DatabaseSettings,
    "retrieval": RetrievalSettings,
    "llm": LlmSettings,
    "extraction": ExtractionSettings,
    "injection": InjectionSettings,
    "trail": TrailSettings,
    "web": WebSettings,
    "backup": BackupSettings,
    "observability": ObservabilitySettings,
}


def env_name(path: tuple[str, ...]) -> str:
    """The generic environment variable of a settings path."""
    if len(path) == 1:
        return ENV_PREFIX + path[0].upper()
    return ENV_PREFIX + path[0].upper() + "__" + path[1].upper()


def path_in(settings_cls: type[BaseModel], name: str) -> tuple[str, ...] | None:
    """Map an ``AMRITA_MEMORY_*`` variable name to a path of ``settings_cls``, or None."""
    rest = name.upper()[len(ENV_PREFIX) :].lower()
    if "__" in rest:
        section, _, key = rest.partition("__")
        model = SECTIONS.get(section)
        if model is not None and key in model.model_fields:
            return (section, key)
        return None
    if rest in settings_cls.model_fields and rest not in SECTIONS:
        return (rest,)
    return None


def unknown_env_variable(name: str) -> ConfigError:
    """The error for an ``AMRITA_MEMORY_*`` name that is no setting (a typo, usually)."""
    return ConfigError(
        f"unknown environment variable {name.upper()}: no such setting "
        f"(settings are {ENV_PREFIX}<KEY> or {ENV_PREFIX}<SECTION>__<KEY>; "
        f"see docs/configuration.md)"
    )


def set_path(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"`{part}` must be a table ([{part}]), got {child!r}")
        node = child
    node[path[-1]] = value


def lookup(tree: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    """(found, value) of a settings path in a nested mapping."""
    node: Any = tree
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def field_at(settings_cls: type[BaseModel], path: tuple[str, ...]) -> FieldInfo | None:
    """The field info of a path of ``settings_cls`` (None when there is no such key)."""
    if len(path) == 2 and path[0] in SECTIONS:
        return SECTIONS[path[0]].model_fields.get(path[1])
    if len(path) == 1:
        return settings_cls.model_fields.get(path[0])
    return None
