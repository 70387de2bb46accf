"""What every ``/memory`` handler shares: the replies, the services it acts on, and the
:class:`Step` a handler hands the dispatcher once the arguments are parsed and checked."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from amrita_memory_pg.domain.consolidation import CycleSummary
from amrita_memory_pg.services.extraction import Extractor
from amrita_memory_pg.services.knowledge import KnowledgeService
from amrita_memory_pg.services.memories import MemoryService
from amrita_memory_pg.services.profiles import ProfileService
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.memos import MemoRepository
from amrita_memory_pg.usecases.knowledge import KnowledgeCases
from amrita_memory_pg.usecases.memories import MemoryCases
from amrita_memory_pg.usecases.memos import MemoCases
from amrita_memory_pg.usecases.pause import PauseGate, pause_gate
from amrita_memory_pg.usecases.profiles import ProfileCases

#: Starts one L3 cycle now; None while no L3 loop runs in this process.
DmnTrigger = Callable[[], Awaitable[None]]
#: Runs one L3 cycle now for a partition key and returns its summary (``Memory.run_cycle``).
CycleRun = Callable[..., Awaitable[CycleSummary]]

Scope = Literal["user", "group", "global"]
#: results of ``search`` (memories and knowledge)
SEARCH_TOP_K = 10
LABELS = {"user": "👤个人", "group": "👥群共享", "global": "🌐全局"}


@dataclass(frozen=True, slots=True)
class TextReply:
    text: str


@dataclass(frozen=True, slots=True)
class MemoReply:
    """A memo to show: a merged-forward message titled ``title``, one node per chunk."""

    title: str
    chunks: tuple[str, ...]


Reply = TextReply | MemoReply
#: what a handler answers: a sentence, a reply, or a step still to perform
Answer = str | Reply


@dataclass(kw_only=True)
class Services:
    """What ``/memory`` acts on; an optional one that is None makes its subcommand answer
    that it is unavailable."""

    memos: MemoRepository
    memories: MemoryService
    settings: Settings
    dmn_trigger: DmnTrigger | None = None
    #: runs a cycle in the foreground and reports it (used when no scheduler trigger is set)
    cycle_run: CycleRun | None = None
    profiles: ProfileService | None = None
    knowledge: KnowledgeService | None = None
    #: for ``clear`` (its backup); None: clear answers that it is unavailable
    store: Store | None = None
    #: for ``extract``; None: extract answers that it is unavailable
    extractor: Extractor | None = None
    #: which model an L3 cycle uses (``Memory.loop_model_label``), shown by ``dmn``
    loop_model: Callable[[], str] | None = None

    # The use cases every handler calls (issue 22): the services above, paused by the
    # trail (people are never refused by a pause: the gate checks automatic callers).

    @property
    def gate(self) -> PauseGate:
        return pause_gate(self.memories.trail)

    @property
    def memory_cases(self) -> MemoryCases:
        return MemoryCases(self.memories, self.gate)

    @property
    def memo_cases(self) -> MemoCases:
        return MemoCases(self.memos, self.gate)

    @property
    def profile_cases(self) -> ProfileCases | None:
        return None if self.profiles is None else ProfileCases(self.profiles, self.gate)

    @property
    def knowledge_cases(self) -> KnowledgeCases | None:
        return None if self.knowledge is None else KnowledgeCases(self.knowledge)


@dataclass(frozen=True, slots=True)
class Step:
    """An operation whose arguments are parsed and whose permission is checked: what is
    left may fail, and the dispatcher turns a failure into the sentence of ``operation``
    (failures.FAILURES). ``what`` names the target in the log, ``label`` the scope in a
    reply."""

    operation: str
    what: str
    perform: Callable[[], Awaitable[Answer]]
    label: str = ""
