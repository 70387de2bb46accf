"""User profiles for every automatic surface: the pause first, then the service."""

from __future__ import annotations

from amrita_memory_pg.domain.profile import ProfileActor, ProfileEdit, ProfileWindow
from amrita_memory_pg.services.profiles import ProfileService, ProfileUpdate
from amrita_memory_pg.usecases.pause import PauseGate


class ProfileCases:
    """Read a window of, and edit, one user's profile."""

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
