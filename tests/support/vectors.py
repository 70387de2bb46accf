"""What the vector backend can find, for assertions that hold on every backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.chroma import ChromaBackend


def as_stored(vector: Any) -> np.ndarray[Any, Any]:
    """A vector as the store keeps it: halfvec, half precision (pgvector rounds to the
    nearest half as numpy does), read back as float32."""
    return np.asarray(vector, dtype=np.float32).astype(np.float16).astype(np.float32)


async def indexed_ids(mem: Memory) -> set[str]:
    """Ids the backend searches: the memory table itself (pgvector) or the collection (chroma)."""
    if isinstance(mem.backend, ChromaBackend):
        return await mem.backend.vector_ids()
    return {r["id"] for r in await mem.pool.fetch("SELECT id FROM amrita_memory.memory")}


async def assert_index_in_step(mem: Memory) -> set[str]:
    """The backend indexes exactly the rows of the memory table; returns those ids."""
    in_pg = {r["id"] for r in await mem.pool.fetch("SELECT id FROM amrita_memory.memory")}
    assert await indexed_ids(mem) == in_pg
    return in_pg
