"""Embedding providers behind one interface, the query cache, and the fingerprint."""

from __future__ import annotations

from amrita_memory_pg.embedding.base import Embedder, EmbeddingProvider, TextKind, Vector

__all__ = ["Embedder", "EmbeddingProvider", "TextKind", "Vector"]
