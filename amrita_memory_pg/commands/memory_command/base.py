"""What every ``/memory`` handler shares: the replies, the services it acts on, and the
:class:`Step` a handler hands the dispatcher once the arguments are parsed and checked."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Self

from amrita_memory_pg.domain.consolidation import CycleSummary
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.extraction import Extractor
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.usecases.bundle import UseCases

#: Starts one L3 cycle now; None while no L3 loop runs in this process.
DmnTrigger = Callable[[], Awaitable[None]]
#: Runs one L3 cycle now for a partition key and returns its summary (``Memory.run_cycle``).
CycleRun = Callable[..., Awaitable[CycleSummary]]
#: names the model an L3 cycle uses, in one phrase (``Memory.loop_model_label``)
LoopModel = Callable[[], Awaitable[str]]

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


@dataclass
class Services:
    """What ``/memory`` acts on: the process's use cases (``Memory.cases``, the ones the
    admin page and the CLI call too, paused by the trail: people are never refused by a
    pause, the gate checks automatic callers), its settings, its store (``clear``'s
    backup) and extractor, and the L3 hooks the adapter has. :meth:`over` makes it."""

    cases: UseCases
    settings: Settings
    store: Store
    extractor: Extractor
    dmn_trigger: DmnTrigger | None = None
    #: runs a cycle in the foreground and reports it (used when no scheduler trigger is set)
    cycle_run: CycleRun | None = None
    #: which model an L3 cycle uses (``Memory.loop_model_label``), shown by ``dmn``
    loop_model: LoopModel | None = None

    @classmethod
    def over(
        cls,
        memory: Memory,
        *,
        dmn_trigger: DmnTrigger | None = None,
        cycle_run: CycleRun | None = None,
        loop_model: LoopModel | None = None,
    ) -> Self:
        """``/memory`` over ``memory`` (one constructor for every adapter and test)."""
        parts = (memory.cases, memory.settings, memory.store, memory.extractor)
        return cls(*parts, dmn_trigger=dmn_trigger, cycle_run=cycle_run, loop_model=loop_model)


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
