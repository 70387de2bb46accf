"""Clearing a scope: every L2 memory of one partition, after a backup.

A person asks (``/memory user clear``, ``/memory group clear`` for admins,
``amrita-memory clear KEY``); the first step only says what would go and hands out a
confirmation token, the second (with the token, or ``--yes`` on the CLI) takes a backup
(``maintenance.backup``: pg_dump + JSONL of the whole store) and then deletes the
partition's memories in one transaction, manual ones included (a person asked). The
memo is not touched. The token is derived from the partition's current contents (count
and a digest of ids and update times) and a 10-minute window, so it needs no state
anywhere, works across processes, and stops matching as soon as the partition changes
or the window has passed (the one before is still accepted).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from amrita_memory_pg.domain.lineage import confirmation_code
from amrita_memory_pg.maintenance.backup import BackupInfo, create_backup
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.services.trail import history_bounds
from amrita_memory_pg.storage.memories import MemoryRepository


def confirmation_token(key: str, count: int, digest: str, now: datetime, *, back: int = 0) -> str:
    """8 hex characters for (partition contents, 10-minute window - ``back``): the one
    confirmation code of destructive steps (``domain/lineage.py``)."""
    return confirmation_code(f"{key}|{count}", digest, now, back=back)


@dataclass(frozen=True, slots=True)
class ClearPlan:
    key: str
    count: int
    token: str
    digest: str

    def accepts(self, token: str, now: datetime) -> bool:
        """The token of this window or the one before."""
        given = token.strip().lower()
        return any(
            given == confirmation_token(self.key, self.count, self.digest, now, back=back)
            for back in (0, 1)
        )


@dataclass(frozen=True, slots=True)
class ClearResult:
    key: str
    deleted: int
    backup: BackupInfo


def _repository(store: Store) -> MemoryRepository:
    settings = store.settings
    return MemoryRepository(
        store.pool,
        store.backend,
        cap=settings.per_session_memory_limit,
        acquire_timeout=settings.database.connect_timeout,
        history=history_bounds(settings.trail),
    )


async def plan_clear(store: Store, key: str, now: datetime | None = None) -> ClearPlan:
    """What clearing ``key`` would delete, and the token that confirms it."""
    count, digest = await _repository(store).digest(key)
    return ClearPlan(
        key, count, confirmation_token(key, count, digest, now or datetime.now(UTC)), digest
    )


async def clear_partition(store: Store, key: str) -> ClearResult:
    """Back the store up, then delete every memory of ``key``; the backup is named in the result."""
    return await delete_backed_up(store, key, await backup_before_clear(store, key))


async def backup_before_clear(store: Store, key: str) -> BackupInfo:
    """The backup a clear takes first (its own snapshot transaction)."""
    return await create_backup(store, reason=f"before clearing {key}")


async def delete_backed_up(store: Store, key: str, backup: BackupInfo) -> ClearResult:
    """The delete of a clear once its backup is taken: one statement, so a caller can
    run it inside its own transaction (the admin page: together with its audit row)."""
    deleted = await _repository(store).clear(key)
    return ClearResult(key, deleted, backup)
