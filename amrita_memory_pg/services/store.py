"""The opened parts of one store: what the service and every operator task work on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import asyncpg

from amrita_memory_pg.domain.ports import Embedder, VectorBackend
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.pg.database import Database


@dataclass(frozen=True, slots=True)
class Store:
    """Settings, database, embedder and vector backend — explicit parts, no tools.

    Maintenance takes this instead of the ``Memory`` service, so that the CLI, the
    start-up checks and a web page can run the same operations without building the
    chat surface, and nothing below the composition module needs ``Memory``.
    """

    settings: Settings
    database: Database
    embedder: Embedder
    backend: VectorBackend

    @property
    def pool(self) -> asyncpg.Pool:
        return self.database.pool

    @property
    def read_pool(self) -> asyncpg.Pool:
        """The replica's pool (``[database] read_url``), else the primary's: only for
        reads that may lag behind a write."""
        return self.database.read_pool

    @property
    def dsn(self) -> str:
        return self.database.target.dsn

    @property
    def backups_dir(self) -> Path:
        return self.settings.resolved_data_dir() / "backups"
