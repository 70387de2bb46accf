"""ChromaDB as the vector backend (``vector_backend = "chroma"``).

Only :mod:`amrita_memory_pg.storage.chroma.backend` talks to chromadb, and it imports the
library lazily: importing this package (or the core) works without the ``chroma`` extra.
"""

from __future__ import annotations

from amrita_memory_pg.storage.chroma.backend import ChromaBackend

__all__ = ["ChromaBackend"]
