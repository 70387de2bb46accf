"""ChromaDB as the vector index (``vector_backend = "chroma"``).

Only :mod:`amrita_memory_pg.storage.chroma.index` talks to chromadb, and it imports the
library lazily: importing this package (or the core) works without the ``chroma`` extra.
"""

from __future__ import annotations

from amrita_memory_pg.storage.chroma.index import ChromaIndex

__all__ = ["ChromaIndex"]
