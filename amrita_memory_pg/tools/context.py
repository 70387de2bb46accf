"""Who is calling a tool: platform, user, group and roles; for the L3 loop, its cycle."""

from __future__ import annotations

from dataclasses import dataclass, field

from amrita_memory_pg.domain.consolidation import CycleContext
from amrita_memory_pg.domain.keys import group_key, personal_key

__all__ = ["GROUP_ADMIN_ROLES", "CycleContext", "ToolContext"]

#: Roles that may manage a group's shared memories (W2) and run admin commands.
GROUP_ADMIN_ROLES = frozenset({"owner", "admin", "superuser"})


@dataclass(frozen=True, slots=True)
class ToolContext:
    """The speaker of the current turn.

    ``roles`` holds strings such as ``superuser`` (bot superuser), ``owner`` / ``admin``
    (of the current group) or ``lp.admin``; adapters fill it from their event.
    """

    platform: str
    user_id: str
    group_id: str | None = None
    roles: frozenset[str] = field(default_factory=frozenset)
    #: set only for the consolidation audience: the cycle the tool runs in
    cycle: CycleContext | None = None

    @property
    def in_group(self) -> bool:
        return bool(self.group_id)

    @property
    def personal_key(self) -> str:
        return personal_key(self.platform, self.user_id)

    @property
    def group_key(self) -> str | None:
        return group_key(self.platform, self.group_id) if self.group_id else None

    @property
    def session_key(self) -> str:
        """The memo partition of this chat: the group's in a group, else the speaker's."""
        return self.group_key or self.personal_key

    @property
    def is_superuser(self) -> bool:
        return "superuser" in self.roles

    @property
    def is_group_admin(self) -> bool:
        return bool(self.roles & GROUP_ADMIN_ROLES)
