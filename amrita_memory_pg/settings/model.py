"""The top-level settings model and how to build it from a file, an environment and
overrides."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.settings.backup import BackupSettings
from amrita_memory_pg.settings.explain import explain
from amrita_memory_pg.settings.keys import ENV_PREFIX, path_in, set_path
from amrita_memory_pg.settings.legacy import ReferenceEnvironment
from amrita_memory_pg.settings.loader import (
    INPUTS,
    Environment,
    Inputs,
    TomlFile,
    find_config_file,
)
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


class Settings(BaseSettings):
    """Everything the package reads: ``Settings()`` reads the process environment and the
    default TOML file; :func:`load_settings` picks the file and the environment explicitly.

    Raises :class:`ConfigError` (one sentence) instead of pydantic's ``ValidationError``.
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        case_sensitive=False,
        extra="forbid",
        frozen=True,
        validate_default=True,
        coerce_numbers_to_str=True,
    )

    per_session_memory_limit: int = Field(
        100, description="L2 memories per partition; a write beyond it is refused (≤0 refuses all)."
    )
    memo_max_chars: int = Field(1000, ge=100, le=10000, description="Hard cap of one L1 memo.")
    write_dedup_seconds: float = Field(
        120.0,
        ge=0,
        le=86400,
        description="A write_memory identical to one made this many seconds before (same "
        "partition, scope, content, author) returns that memory instead of a duplicate, so "
        "retrying a write whose outcome was unknown is safe; 0 = off.",
    )
    language: Literal["zh", "en"] = Field(
        "zh",
        description="Language of the `amrita-memory` command (help, output, headers) and of "
        "the admin page (a person's language link on the page, kept in a cookie, wins for "
        "that browser; the browser's Accept-Language does not). The bot's replies to "
        "chat users stay Chinese.",
    )
    data_dir: Path = Field(
        Path("data/amrita_memory_pg"),
        description="Embedded database, backups and chroma files (relative to the working dir).",
    )
    vector_backend: Literal["pgvector", "chroma"] = Field(
        "pgvector", description="Where L2 vectors live."
    )
    group_memory_edit: Literal["admins_or_author", "anyone"] = Field(
        "admins_or_author",
        description="Who may update/delete group memories through the tools.",
    )
    tool_names: Literal["reference", "monstrum", "both"] = Field(
        "reference",
        description="Which names of the L2 write tools the chat model is offered (and, under "
        "AmritaBot, are registered in its tool registry): reference = write_memory / "
        "update_memory / delete_memory (amrita_plugin_memory's); monstrum = memory_write "
        "(writes, or updates the memory its id names) / memory_delete; both = all five. "
        "Names not offered are still accepted when called.",
    )
    memo_inject_personal_in_group: bool = Field(
        False, description="In group chats also inject the speaker's personal memo."
    )
    protect_manual_memories: bool = Field(
        True,
        description="Memories added by a person (source=user: /memory add, the CLI) are never "
        "changed or deleted by automatic processes (the chat LLM's tools, extraction, L3, "
        "the decay sweep); the database refuses it too.",
    )
    chat_log_keep: int = Field(
        200,
        ge=0,
        le=100000,
        description="Chat lines kept per session for the L3 loop (newest first); 0 = no chat log.",
    )
    decay: DecaySettings = Field(default_factory=DecaySettings)  # type: ignore[arg-type]
    subconscious: SubconsciousSettings = Field(default_factory=SubconsciousSettings)  # type: ignore[arg-type]
    profile: ProfileSettings = Field(default_factory=ProfileSettings)  # type: ignore[arg-type]
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)  # type: ignore[arg-type]
    vector_db: VectorDbSettings = Field(default_factory=VectorDbSettings)  # type: ignore[arg-type]
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)  # type: ignore[arg-type]
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)  # type: ignore[arg-type]
    llm: LlmSettings = Field(default_factory=LlmSettings)  # type: ignore[arg-type]
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)  # type: ignore[arg-type]
    injection: InjectionSettings = Field(default_factory=InjectionSettings)  # type: ignore[arg-type]
    trail: TrailSettings = Field(default_factory=TrailSettings)  # type: ignore[arg-type]
    web: WebSettings = Field(default_factory=WebSettings)  # type: ignore[arg-type]
    backup: BackupSettings = Field(default_factory=BackupSettings)  # type: ignore[arg-type]
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)  # type: ignore[arg-type]

    def __init__(self, **values: Any) -> None:
        # The sources are built inside super().__init__; they find the environment and the
        # file in INPUTS, and leave themselves there for explain.
        inputs = INPUTS.get()
        if inputs is None:
            inputs = Inputs(os.environ, find_config_file(None, os.environ))
        token = INPUTS.set(inputs)
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigError(explain(exc, inputs.layers(), Settings)) from None
        finally:
            INPUTS.reset(token)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Init kwargs > ``AMRITA_MEMORY_*`` > reference names > TOML file.

        No ``.env`` and no secrets directory: NoneBot reads ``.env`` itself and hands the
        values over as init kwargs, and the CLI has never read one.
        """
        inputs = INPUTS.get() or Inputs(os.environ, None)
        inputs.sources = (
            init_settings,
            Environment(settings_cls, inputs.environ),
            ReferenceEnvironment(settings_cls, inputs.environ),
            TomlFile(settings_cls, inputs.toml_file),
        )
        return inputs.sources

    def resolved_data_dir(self) -> Path:
        """The data directory as an absolute path (relative paths are from the working dir)."""
        return self.data_dir.expanduser().resolve()


def loop_llm(settings: Settings) -> LlmSettings:
    """The L3 loop's endpoint: the ``[subconscious] llm_*`` keys, each falling back to ``[llm]``."""
    sub, base = settings.subconscious, settings.llm
    key = sub.llm_api_key if sub.llm_api_key.get_secret_value() else base.api_key
    return LlmSettings(
        base_url=sub.llm_base_url or base.base_url,
        model=sub.llm_model or base.model,
        api_key=key,
        timeout_seconds=base.timeout_seconds,
    )


#: how to give the L3 loop a model of its own (said wherever it has none)
LOOP_MODEL_HOWTO = "设置 [subconscious] llm_base_url 与 llm_model（或 LLM_BASE_URL 与 LLM_MODEL）"


def loop_endpoint_label(settings: Settings) -> str | None:
    """The loop's configured endpoint in one phrase — «model（配置的端点 [subconscious]
    llm_*）» or «…（配置的端点 LLM_*）» — or None when none is configured."""
    llm = loop_llm(settings)
    if not (llm.base_url and llm.model):
        return None
    sub = settings.subconscious
    where = "[subconscious] llm_*" if sub.llm_base_url or sub.llm_model else "LLM_*"
    return f"{llm.model}（配置的端点 {where}）"


def env_path(name: str) -> tuple[str, ...] | None:
    """Map an ``AMRITA_MEMORY_*`` variable name to a settings path, or None if unknown."""
    return path_in(Settings, name)


def build_settings(
    values: Mapping[str, Any] | None = None,
    *,
    labels: Mapping[tuple[str, ...], str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    read_default_files: bool = True,
) -> Settings:
    """:class:`Settings` from nested ``values`` (init kwargs) over ``env`` and a TOML file.

    ``labels`` name where each value came from, for the error sentence. ``env`` defaults
    to ``os.environ``.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    path = find_config_file(config_file, environ) if (config_file or read_default_files) else None
    token = INPUTS.set(Inputs(environ, path, dict(labels or {})))
    try:
        return Settings(**dict(values or {}))
    finally:
        INPUTS.reset(token)


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    read_default_files: bool = True,
) -> Settings:
    """Build :class:`Settings` from defaults, a TOML file, the environment and overrides.

    ``env`` defaults to ``os.environ``. ``overrides`` maps dotted paths
    (``"decay.enabled"``) to values; they win over everything else.
    """
    values: dict[str, Any] = {}
    labels: dict[tuple[str, ...], str] = {}
    for dotted, value in (overrides or {}).items():
        key_path = tuple(dotted.split("."))
        set_path(values, key_path, value)
        labels[key_path] = "override"
    return build_settings(
        values,
        labels=labels,
        config_file=config_file,
        env=env,
        read_default_files=read_default_files,
    )
