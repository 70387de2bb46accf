"""Build the configured provider (``EMBEDDING_PROCTOL``) wrapped in an :class:`Embedder`."""

from __future__ import annotations

from amrita_memory_pg.embedding.base import Embedder, EmbeddingProvider
from amrita_memory_pg.errors import ConfigError
from amrita_memory_pg.settings import EmbeddingSettings


def create_provider(settings: EmbeddingSettings) -> EmbeddingProvider:
    """The provider named by ``settings.protocol``; imports heavy modules only when chosen."""
    if settings.protocol == "hash":
        from amrita_memory_pg.embedding.hashing import HashingProvider

        return HashingProvider(settings.hash_dim)
    raise ConfigError(f"embedding protocol {settings.protocol!r} is not available yet")


def create_embedder(settings: EmbeddingSettings) -> Embedder:
    return Embedder(
        create_provider(settings),
        batch_size=settings.batch_size,
        cache_size=settings.query_cache_size,
    )
