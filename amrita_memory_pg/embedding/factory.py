"""Build the configured provider (``EMBEDDING_PROCTOL``) wrapped in an :class:`Embedder`."""

from __future__ import annotations

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.embedding.base import Embedder, EmbeddingProvider
from amrita_memory_pg.settings import EmbeddingSettings


def create_provider(settings: EmbeddingSettings) -> EmbeddingProvider:
    """The provider named by ``settings.protocol``; imports heavy modules only when chosen."""
    if settings.protocol == "hash":
        from amrita_memory_pg.embedding.hashing import HashingProvider

        return HashingProvider(settings.hash_dim)
    if settings.protocol == "local":
        from amrita_memory_pg.embedding.local import LocalProvider

        return LocalProvider(settings.model_name, threads=settings.local_threads)
    if settings.protocol == "ollama-embed":
        from amrita_memory_pg.embedding.ollama import OllamaProvider

        return OllamaProvider(
            settings.model_url,
            settings.model_name,
            timeout_seconds=settings.timeout_seconds,
            max_retries=settings.max_retries,
        )
    if settings.protocol == "openai":
        from amrita_memory_pg.embedding.openai_compat import OpenAIProvider

        return OpenAIProvider(
            settings.model_url,
            settings.model_name,
            settings.api_key.get_secret_value(),
            timeout_seconds=settings.timeout_seconds,
            max_retries=settings.max_retries,
        )
    raise ConfigError(f"unknown embedding protocol {settings.protocol!r}")


def create_embedder(settings: EmbeddingSettings) -> Embedder:
    return Embedder(
        create_provider(settings),
        batch_size=settings.batch_size,
        cache_size=settings.query_cache_size,
    )
