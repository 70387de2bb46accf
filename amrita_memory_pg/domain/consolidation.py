"""What one L3 consolidation cycle reports, shared by the runner and the scheduler.

The runner (``services/consolidation``) produces a :class:`CycleSummary`; the scheduler
only needs ``ok`` to apply the penalty rule (success resets, failure keeps) and to plan
the next run; ``/memory dmn`` and ``amrita-memory consolidate`` print the rest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from amrita_memory_pg.domain.lineage import Candidate


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
    #: another process of the fleet holds the target's lease: its owner
    #: (``host:pid:start``); nothing ran here
    held_by: str | None = None
    #: the cycle gave way to a message of its target (reference §8.3 step 3): not a
    #: run and not a failure for the scheduler; what it did so far stays done
    aborted: bool = False


#: Runs one cycle now for a target partition key; what the scheduler calls.
CycleRunner = Callable[[str], Awaitable[CycleSummary]]


def key_subject(key: str) -> str:
    """The id a partition key names (``QQPlatform_Private_10001`` → ``10001``), else the key."""
    head, sep, tail = key.rpartition("_")
    return tail if sep and tail.isdigit() and head else key


def is_private_key(key: str) -> bool:
    """Whether a partition key is a person's (``…_Private_{id}``, legacy ``user_{id}``)."""
    head, _, tail = key.rpartition("_")
    return tail.isdigit() and (head.endswith("Private") or head == "user")


@dataclass(slots=True)
class CycleContext:
    """The L3 consolidation cycle a loop tool runs in.

    The loop's tools act on ``target_key`` (a partition key, personal or group), not on
    a speaker; ``cycle_id`` ties what they do (claimed knowledge suggestions, token
    usage, pending messages) to the cycle, so it is committed only if the cycle
    succeeds. Mutable: tools record the cycle's progress (context fetched, stopped,
    memories changed). Per cycle, never per process (reference B3).
    """

    cycle_id: int
    target_key: str
    dry_run: bool = False
    context_fetched: bool = False
    stopped: bool = False
    summary: str | None = None
    #: memories written, updated or deleted by the loop's tools in this cycle
    changed: int = 0
    #: tokens (prompt + completion) the cycle's model calls have cost so far, as the
    #: model reported them (the budget's count; token_usage has every call)
    tokens: int = 0
    #: chat lines the cycle was shown (read_chat_context, read_sessions): what a text
    #: it writes may have been made from (domain/lineage.py)
    shown: list[Candidate] = field(default_factory=list)


def clusters(ids: Sequence[str], pairs: Sequence[tuple[str, str, float]]) -> list[list[str]]:
    """Connected components (size ≥ 2) of ``pairs`` restricted to ``ids`` (union-find).

    Members are in the order of ``ids``; groups are ordered by their first member — the
    reference's duplicate-helper order (§8.8, tool 9).
    """
    position = {item: i for i, item in enumerate(ids)}
    parent = list(range(len(ids)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b, _ in pairs:
        if a in position and b in position:
            ra, rb = find(position[a]), find(position[b])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[str]] = {}
    for i, item in enumerate(ids):
        groups.setdefault(find(i), []).append(item)
    return sorted((g for g in groups.values() if len(g) >= 2), key=lambda g: position[g[0]])


#: the shortest id prefix the loop is shown and accepts (8 hex characters: a collision
#: among a partition's memories is a one-in-a-billion event, and then the prefix grows)
SHORT_ID = 8


def short_ids(ids: Sequence[str], minimum: int = SHORT_ID) -> dict[str, str]:
    """Each id's shortest prefix of at least ``minimum`` characters that no other id of
    ``ids`` starts with (the whole id when it has no shorter unique one).

    Why: a 32-hex memory id is ~17 cl100k tokens, its first 8 characters ~4; the loop's
    pre-pass lists some thirty ids and every edit names them again, and each call of a
    cycle re-sends all of them. The loop's tools take such a prefix back (unique in the
    partition, else refused), so the saving costs no precision. An id that is a prefix
    of another is shown whole: the tools look an exact id up first.
    """
    ordered = sorted(set(ids))
    out: dict[str, str] = {}
    for index, item in enumerate(ordered):
        # in sorted order only the neighbours can share the longest prefix with ``item``
        neighbours = ordered[max(0, index - 1) : index] + ordered[index + 1 : index + 2]
        shared = max((_common(item, other) for other in neighbours), default=0)
        out[item] = item[: max(minimum, shared + 1)]
    return out


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
