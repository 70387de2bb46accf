"""The behaviour suite runs once per vector backend (pgvector, chroma) with the hashing
embedder, and once more on pgvector with the offline model (``local``: multilingual-e5),
so that the tools are checked against real semantic vectors too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings, load_settings

BACKENDS = ["pgvector", "chroma"]
VARIANTS = [("pgvector", "hash"), ("chroma", "hash"), ("pgvector", "local")]


@pytest.fixture(params=VARIANTS, ids=["pgvector", "chroma", "pgvector-local"])
def variant(request: pytest.FixtureRequest) -> tuple[str, str]:
    backend, protocol = request.param
    return str(backend), str(protocol)


@pytest.fixture
def backend(variant: tuple[str, str]) -> str:
    return variant[0]


@pytest.fixture
def protocol(variant: tuple[str, str]) -> str:
    return variant[1]


@pytest.fixture
def make_settings(
    db_dsn: str, tmp_path: Path, backend: str, protocol: str
) -> Callable[..., Settings]:
    """Settings on the per-test database for this backend; keyword overrides by dotted path."""

    def build(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "database.url": db_dsn,
            "data_dir": str(tmp_path / "data"),
            "embedding.protocol": protocol,
            "vector_backend": backend,
            "database.pool_max_size": 20,
        }
        values.update({k.replace("__", "."): v for k, v in overrides.items()})
        return load_settings(env={}, read_default_files=False, overrides=values)

    return build


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[Memory]:
    async with open_memory(make_settings()) as mem:
        yield mem
