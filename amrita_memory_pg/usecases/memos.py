"""L1 memos for every automatic surface: the pause first, the cap checked before sending."""

from __future__ import annotations

from datetime import datetime

from amrita_memory_pg.domain.errors import MemoTooLong
from amrita_memory_pg.domain.records import Memo, MemoWrite
from amrita_memory_pg.storage.memos import MemoRepository
from amrita_memory_pg.usecases.pause import PauseGate


class MemoCases:
    """Read, append and replace one partition's memo.

    A text longer than the cap can never fit: it is refused with :class:`MemoTooLong`
    without a write, with the numbers the database's own check gives (for an append,
    the length of the joined memo).
    """

    def __init__(self, memos: MemoRepository, gate: PauseGate) -> None:
        self.memos = memos
        self.gate = gate

    @property
    def max_chars(self) -> int:
        return self.memos.max_chars

    async def read(self, partition_key: str) -> Memo:
        await self.gate.check(partition_key)
        return await self.memos.get(partition_key)

    async def check_fits(self, partition_key: str, text: str, *, appending: bool) -> None:
        """:class:`MemoTooLong` when ``text`` alone exceeds the cap (a dry run's check)."""
        limit = self.memos.max_chars
        if len(text) <= limit:
            return
        current = await self.memos.get(partition_key)
        length = len(text) + (current.chars + 1 if appending and current.chars else 0)
        raise MemoTooLong(length, limit, current.chars)

    async def append(
        self, partition_key: str, addition: str, *, now: datetime | None = None
    ) -> MemoWrite:
        await self.gate.check(partition_key)
        await self.check_fits(partition_key, addition, appending=True)
        return await self.memos.append(partition_key, addition, now=now)

    async def replace(
        self, partition_key: str, content: str, *, now: datetime | None = None
    ) -> MemoWrite:
        await self.gate.check(partition_key)
        await self.check_fits(partition_key, content, appending=False)
        return await self.memos.replace(partition_key, content, now=now)
