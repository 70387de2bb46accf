"""The reference plugin's environment variable names (``DATABASE_URL``, ``EMBEDDING_*``,
``VECTOR_DB_*``, ``LLM_*``…) and the settings source that reads them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from amrita_memory_pg.settings.keys import set_path

#: Reference (and conventional) environment variable names → settings path.
LEGACY_ENV: dict[str, tuple[str, ...]] = {
    "DATABASE_URL": ("database", "url"),
    "DATABASE_READ_URL": ("database", "read_url"),
    "VECTOR_DB_TYPE": ("vector_db", "type"),
    "VECTOR_DB_SERVER": ("vector_db", "server"),
    "VECTOR_DB_PORT": ("vector_db", "port"),
    "VECTOR_DB_SERVER_SSL": ("vector_db", "server_ssl"),
    "VECTOR_DB_REMOTE_HEADERS": ("vector_db", "remote_headers"),
    "VECTOR_DB_TENANT": ("vector_db", "tenant"),
    "VECTOR_DB_DATABASE": ("vector_db", "database"),
    "EMBEDDING_MODEL_URL": ("embedding", "model_url"),
    "EMBEDDING_MODEL_NAME": ("embedding", "model_name"),
    "EMBEDDING_PROCTOL": ("embedding", "protocol"),
    "EMBEDDING_MODEL_API_KEY": ("embedding", "api_key"),
    "EMBED_CHECK_ON_STARTUP": ("embedding", "check_on_startup"),
    "EMBED_MISMATCH_POLICY": ("embedding", "mismatch_policy"),
    "REEMBED_BATCH_SIZE": ("embedding", "reembed_batch_size"),
    "REEMBED_BACKUP_KEEP": ("embedding", "reembed_backup_keep"),
    "LLM_BASE_URL": ("llm", "base_url"),
    "LLM_MODEL": ("llm", "model"),
    "LLM_API_KEY": ("llm", "api_key"),
}

LEGACY_BY_PATH = {path: name for name, path in LEGACY_ENV.items()}


class ReferenceEnvironment(PydanticBaseSettingsSource):
    """The reference plugin's variable names (:data:`LEGACY_ENV`).

    They share no prefix and point into sections (``EMBEDDING_PROCTOL`` →
    ``embedding.protocol``), which neither ``env_prefix`` nor a field alias can express.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        upper = {str(k).upper(): v for k, v in environ.items()}
        self.tree: dict[str, Any] = {}
        for name, path in LEGACY_ENV.items():
            if upper.get(name) is not None:
                set_path(self.tree, path, upper[name])

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.tree.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.tree)

    def supplied(self) -> dict[str, Any]:
        return self()

    def where(self, path: tuple[str, ...]) -> str:
        return f"environment {LEGACY_BY_PATH[path]}"
