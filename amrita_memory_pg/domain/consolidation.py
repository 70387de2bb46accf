"""What one L3 consolidation cycle reports, shared by the runner and the scheduler.

The runner (``services/consolidation``) produces a :class:`CycleSummary`; the scheduler
only needs ``ok`` to apply the penalty rule (success resets, failure keeps) and to plan
the next run; ``/memory dmn`` and ``amrita-memory consolidate`` print the rest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CycleSummary:
    """The outcome of one cycle for one target partition."""

    cycle_id: int
    target_key: str
    ok: bool
    #: why the cycle failed (redacted, one sentence), None when ok
    error: str | None = None
    iterations: int = 0
    tool_calls: int = 0
    memories_changed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: the model's own summary (``subconscious_iter_stop``), if it gave one
    summary: str | None = None
    dry_run: bool = False


#: Runs one cycle now for a target partition key; what the scheduler calls.
CycleRunner = Callable[[str], Awaitable[CycleSummary]]
