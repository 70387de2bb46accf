"""The search-parity suites' store (test_hybrid_search, test_search_v2/v3/v5/v7): room for
10,000 memories per partition and a partition's own HNSW index from 300 rows, so one test
reaches both the exact and the ANN path. A module that needs another store defines its own
``memory`` fixture (test_ann_index, test_chroma_backend)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from amrita_memory_pg.memory import Memory
from tests.support.memory import memory_on


@pytest.fixture
async def memory(db_dsn: str, tmp_path: Path) -> AsyncIterator[Memory]:
    async with memory_on(
        db_dsn, tmp_path, startup=True, per_session_memory_limit=10_000, retrieval__ann_min_rows=300
    ) as mem:
        yield mem
