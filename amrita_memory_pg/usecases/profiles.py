"""User profiles for every automatic surface: the pause first, then the service."""

from __future__ import annotations

from amrita_memory_pg.domain.profile import (
    Profile,
    ProfileActor,
    ProfileChange,
    ProfileEdit,
    ProfileInfo,
    ProfileWindow,
)
from amrita_memory_pg.services.profiles import ProfileService, ProfileUpdate
from amrita_memory_pg.usecases.pause import PauseGate


class ProfileCases:
    """Read a window of, edit, list the changes of, revert and replace one user's
    profile (``ProfileRefused`` for a bad request: nothing written)."""

    def __init__(self, profiles: ProfileService, gate: PauseGate) -> None:
        self.profiles = profiles
        self.gate = gate

    async def read(
        self, partition_key: str, start: int | None = None, end: int | None = None
    ) -> ProfileWindow:
        await self.gate.check(partition_key)
        return await self.profiles.read(partition_key, start, end)

    async def edit(
        self, partition_key: str, edit: ProfileEdit, actor: ProfileActor, *, dry_run: bool
    ) -> ProfileUpdate:
        await self.gate.check(partition_key)
        return await self.profiles.edit(partition_key, edit, actor, dry_run=dry_run)

    async def get(self, partition_key: str) -> Profile:
        await self.gate.check(partition_key)
        return await self.profiles.get(partition_key)

    async def history(self, partition_key: str, limit: int | None = None) -> list[ProfileChange]:
        await self.gate.check(partition_key)
        return await self.profiles.history(partition_key, limit)

    async def change(self, partition_key: str, version: int) -> ProfileChange | None:
        await self.gate.check(partition_key)
        return await self.profiles.change(partition_key, version)

    async def revert(self, partition_key: str, version: int, actor: ProfileActor) -> ProfileUpdate:
        await self.gate.check(partition_key)
        return await self.profiles.revert(partition_key, version, actor)

    async def replace(
        self, partition_key: str, content: Profile, actor: ProfileActor, *, operation: str
    ) -> ProfileUpdate:
        await self.gate.check(partition_key)
        return await self.profiles.replace(partition_key, content, actor, operation=operation)

    async def listing(self, limit: int, offset: int = 0) -> tuple[int, list[ProfileInfo]]:
        """(total, a page of profiles), the most recently changed first."""
        return await self.profiles.listing(limit, offset)

    async def rewrite(
        self,
        partition_key: str,
        summary: str,
        lines: tuple[str, ...],
        actor: ProfileActor,
        *,
        version: int,
    ) -> ProfileUpdate:
        """The whole profile as a person edited it from ``version`` (the admin page)."""
        await self.gate.check(partition_key)
        return await self.profiles.rewrite(partition_key, summary, lines, actor, version=version)
