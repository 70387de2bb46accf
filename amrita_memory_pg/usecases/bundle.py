"""Every use case over one process's services: what a person's surface (the admin page,
the CLI) reaches through ``Memory.cases`` instead of calling the services itself."""

from __future__ import annotations

from dataclasses import dataclass

from amrita_memory_pg.services.knowledge import KnowledgeService
from amrita_memory_pg.services.leases import Leases
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.services.profiles import ProfileService
from amrita_memory_pg.services.trail import TrailService
from amrita_memory_pg.storage.activity import ActivityRepository
from amrita_memory_pg.storage.lineage import LineageRepository
from amrita_memory_pg.storage.memos import MemoRepository
from amrita_memory_pg.usecases.forgetting import ForgetCases
from amrita_memory_pg.usecases.knowledge import KnowledgeCases
from amrita_memory_pg.usecases.memories import MemoryCases
from amrita_memory_pg.usecases.memos import MemoCases
from amrita_memory_pg.usecases.pause import PauseCases, pause_gate
from amrita_memory_pg.usecases.profiles import ProfileCases


@dataclass(frozen=True, slots=True)
class UseCases:
    memories: MemoryCases
    memos: MemoCases
    profiles: ProfileCases
    knowledge: KnowledgeCases
    pause: PauseCases
    forgetting: ForgetCases

    @classmethod
    def over(
        cls,
        *,
        memories: MemoryService,
        memos: MemoRepository,
        profiles: ProfileService,
        knowledge: KnowledgeService,
        trail: TrailService,
        lineage: LineageRepository,
        activity: ActivityRepository | None = None,
        leases: Leases | None = None,
    ) -> UseCases:
        """The cases over these services, paused by ``trail``."""
        gate = pause_gate(trail)
        return cls(
            memories=MemoryCases(memories, gate),
            memos=MemoCases(memos, gate),
            profiles=ProfileCases(profiles, gate),
            knowledge=KnowledgeCases(knowledge),
            pause=PauseCases(trail),
            forgetting=ForgetCases(memories, lineage, gate, activity=activity, leases=leases),
        )
