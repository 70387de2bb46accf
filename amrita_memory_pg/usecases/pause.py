"""The pause, checked FIRST on every automatic path, so that a pause means paused.

An automatic caller (the chat tools, extraction, the L3 loop: the task's actor kind
``llm``, ``extraction`` or ``l3``) neither reads nor writes a paused partition. The
check runs before anything else (no embedding call, no search, no model call) and a
failing check raises — it is never read as "not paused". The database refuses the
writes as well (SQLSTATE AMZ01, trail.sql and pause.sql), so a pause that lands
between this check and the write still holds. People (actor ``person``) are not
checked: they manage a paused partition.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from amrita_memory_pg.domain.errors import MemoryPaused
from amrita_memory_pg.services.trail import TrailService
from amrita_memory_pg.storage.trail import refusable

#: whether a partition is paused (the trail's ``is_paused``)
PausedCheck = Callable[[str], Awaitable[bool]]


class PauseGate:
    """Raises :class:`MemoryPaused` for an automatic caller of a paused partition."""

    def __init__(self, paused: PausedCheck | None) -> None:
        self._paused = paused

    async def check(self, partition_key: str) -> None:
        if self._paused is not None and refusable() and await self._paused(partition_key):
            raise MemoryPaused(partition_key)


def pause_gate(trail: TrailService | None) -> PauseGate:
    """The gate of a process's trail (None: no trail opened, nothing is paused)."""
    return PauseGate(trail.is_paused if trail is not None else None)


class PauseCases:
    """Pause and resume a partition (people only: the surfaces check who may)."""

    def __init__(self, trail: TrailService) -> None:
        self.trail = trail

    async def pause(
        self,
        partition_key: str,
        *,
        by: str,
        reason: str | None = None,
        now: datetime | None = None,
    ) -> bool:
        """False: it already was paused."""
        return await self.trail.pause(partition_key, by=by, reason=reason, now=now)

    async def resume(self, partition_key: str) -> bool:
        """False: it was not paused."""
        return await self.trail.resume(partition_key)
