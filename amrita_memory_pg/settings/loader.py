"""Where the settings come from: the ``AMRITA_MEMORY_*`` environment, the TOML file, and
what one construction read (kept to explain an error)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    TomlConfigSettingsSource,
)

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.settings.keys import (
    ENV_PREFIX,
    ENV_RESERVED,
    env_name,
    path_in,
    unknown_env_variable,
)
from amrita_memory_pg.settings.legacy import ReferenceEnvironment

DEFAULT_CONFIG_PATHS = (
    Path("config/amrita_memory_pg/config.toml"),
    # The reference plugin's file: same keys, so a migrating user keeps their config.
    Path("config/amrita_plugin_memory/config.toml"),
)


class Environment(EnvSettingsSource):
    """``AMRITA_MEMORY_<KEY>`` / ``AMRITA_MEMORY_<SECTION>__<KEY>`` from a given mapping.

    pydantic-settings' env source does the parsing; on top of it: the mapping is an
    argument (``load_settings(env=…)``), an unknown prefixed name is refused (the env
    source would ignore a typo silently), and a list/object value that is not valid JSON
    reaches validation as it is, so the error names the key instead of the source class.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)
        for name in self.env_vars:
            upper = name.upper()
            known = (
                not upper.startswith(ENV_PREFIX)
                or upper in ENV_RESERVED
                or path_in(settings_cls, upper)
            )
            if not known:
                raise unknown_env_variable(upper)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {str(k).lower(): v for k, v in self._environ.items()}

    def supplied(self) -> dict[str, Any]:
        return self()

    def where(self, path: tuple[str, ...]) -> str:
        return f"environment {env_name(path)}"

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        try:
            return super().decode_complex_value(field_name, field, value)
        except ValueError:
            return value


class TomlFile(TomlConfigSettingsSource):
    """The TOML file, or nothing; a broken file is a one-sentence :class:`ConfigError`."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls, toml_file=path)
        # The init-kwargs base class matches top-level names case-insensitively; a TOML
        # key is spelled exactly (`Decay` is a typo, as it always was).
        self.init_kwargs = dict(self.toml_data)
        self.path = path

    def supplied(self) -> dict[str, Any]:
        return self.init_kwargs

    def where(self, path: tuple[str, ...]) -> str:
        return str(self.path)

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            return super()._read_file(file_path)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file_path} is not valid TOML: {exc}") from exc
        except OSError as exc:
            raise ConfigError(f"cannot read {file_path}: {exc}") from exc


@dataclass
class Layer:
    """What one source supplied, and how to name where a key of it came from."""

    data: Mapping[str, Any]
    where: Callable[[tuple[str, ...]], str]


@dataclass
class Inputs:
    """What one :class:`Settings` construction reads besides its init kwargs.

    ``settings_customise_sources`` is a classmethod with no per-call arguments, so the
    environment mapping and the TOML path reach it through :data:`INPUTS`.
    """

    environ: Mapping[str, str]
    toml_file: Path | None
    #: where each init kwarg came from ("override", or the NoneBot name), by settings path
    init_labels: Mapping[tuple[str, ...], str] = field(default_factory=dict)
    sources: tuple[PydanticBaseSettingsSource, ...] = ()

    def init_label(self, path: tuple[str, ...]) -> str:
        """Where an init kwarg came from; an error on a section names a key inside it."""
        if path in self.init_labels:
            return self.init_labels[path]
        inside = [label for key, label in self.init_labels.items() if key[: len(path)] == path]
        return inside[0] if inside else "argument"

    def layers(self) -> list[Layer]:
        """Each source's data, highest precedence first (only built to explain an error)."""
        layers: list[Layer] = []
        for source in self.sources:
            if isinstance(source, Environment | ReferenceEnvironment | TomlFile):
                layers.append(Layer(source.supplied(), source.where))
            elif isinstance(source, InitSettingsSource):
                layers.append(Layer(source.init_kwargs, self.init_label))
        return layers


INPUTS: ContextVar[Inputs | None] = ContextVar("amrita_memory_settings_inputs", default=None)


def find_config_file(
    explicit: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> Path | None:
    """The TOML file to read: explicit, ``AMRITA_MEMORY_CONFIG``, or a default path that exists."""
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        return path
    named = env.get("AMRITA_MEMORY_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(f"AMRITA_MEMORY_CONFIG points to a missing file: {path}")
        return path
    for candidate in DEFAULT_CONFIG_PATHS:
        if candidate.is_file():
            return candidate
    return None
