"""Pure decay math: the Python twin of ``sql/functions/decay.sql``.

Retrieval scores a memory by similarity times a time decay:

    similarity   = 1 / (1 + max(d, 0))               d = squared L2 distance (as Chroma reports it)
    half_life    = base_days × (1 + boost × rank)     rank: low 0, medium 1, high 2 (days)
    decay_factor = max(0.5 ^ (age_days / half_life), floor)    (1 when half_life ≤ 0)
    score        = similarity × decay_factor

The sweep gives each tier a lifetime (days): low = short, high = long, medium = the
geometric mean; a memory older than its tier's lifetime is demoted one tier, and a low
one is purged. The SQL functions carry the same names with a ``_v1`` suffix; a property
test checks that both agree to 1e-9. Time is always an argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from amrita_memory_pg.domain.importance import HIGH, LOW, MEDIUM, importance_rank

SECONDS_PER_DAY = 86400.0
#: 0.5 ** 1000 ≈ 9e-302; PostgreSQL raises on float underflow, so both sides clamp here.
MAX_HALVINGS = 1000.0
#: Below a femtoday the factor is 1 (to 1e-9 for half-lives ≥ 1e-6 d); SQL division would underflow.
MIN_AGE_DAYS = 1e-15

SweepAction = Literal["keep", "demote", "purge"]


@dataclass(frozen=True, slots=True)
class DecayPolicy:
    """The ``[decay]`` numbers that the formulas use."""

    half_life_days: float = 30.0
    importance_boost: float = 1.0
    score_floor: float = 0.05
    short_term_days: float = 7.0
    long_term_days: float = 90.0
    #: off: rank by distance alone (``[decay] enabled = false``)
    enabled: bool = True
    #: candidate multiplier for a backend that cannot score in SQL (chroma)
    overfetch: int = 3


def age_days(created: datetime, now: datetime) -> float:
    """Days from ``created`` to ``now``; a future timestamp counts as age 0."""
    return max((now - created).total_seconds() / SECONDS_PER_DAY, 0.0)


def half_life_days(base_days: float, importance: int, boost: float) -> float:
    """Half-life (days) of a memory of this importance: base × (1 + boost × rank)."""
    return base_days * (1.0 + boost * importance_rank(importance))


def decay_factor(age: float, half_life: float, floor: float) -> float:
    """max(0.5 ^ (age / half_life), floor), or 1 when the half-life is not positive."""
    if half_life <= 0:
        return 1.0
    if age < MIN_AGE_DAYS:
        return max(1.0, floor)
    if age >= MAX_HALVINGS * half_life:
        return max(math.pow(0.5, MAX_HALVINGS), floor)
    return max(math.pow(0.5, age / half_life), floor)


def similarity_from_distance(distance: Any) -> float:
    """1 / (1 + max(d, 0)); a missing or non-numeric distance counts as 0 (reference quirk)."""
    if isinstance(distance, bool) or not isinstance(distance, int | float):
        return 1.0
    if math.isnan(distance):
        return 1.0
    return 1.0 / (1.0 + max(float(distance), 0.0))


def decay_score(
    distance: Any,
    age: float,
    importance: int,
    policy: DecayPolicy,
) -> float:
    """similarity(distance) × decay_factor(age, half_life(importance))."""
    hl = half_life_days(policy.half_life_days, importance, policy.importance_boost)
    return similarity_from_distance(distance) * decay_factor(age, hl, policy.score_floor)


def tier_days(importance: int, short_days: float, long_days: float) -> float:
    """Lifetime (days) of the importance's tier; swapped bounds stay monotone."""
    lo, hi = sorted((float(short_days), float(long_days)))
    rank = importance_rank(importance)
    if rank == 0:
        return lo
    if rank == 2:
        return hi
    return math.sqrt(lo * hi) if hi > lo else lo


def demoted_importance(importance: int) -> int | None:
    """The importance one tier down (high → medium 5, medium → low 3), None for low."""
    rank = importance_rank(importance)
    if rank == 2:
        return MEDIUM
    if rank == 1:
        return LOW
    return None


def sweep_action(importance: int, age: float, short_days: float, long_days: float) -> SweepAction:
    """keep while age ≤ the tier lifetime (inclusive); past it demote, or purge a low one."""
    if age <= tier_days(importance, short_days, long_days):
        return "keep"
    return "purge" if importance_rank(importance) == 0 else "demote"


def parse_created_at(value: Any) -> datetime | None:
    """Parse a stored timestamp like the reference: ISO text or datetime → aware UTC, else None."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


__all__ = [
    "HIGH",
    "LOW",
    "MEDIUM",
    "DecayPolicy",
    "SweepAction",
    "age_days",
    "decay_factor",
    "decay_score",
    "demoted_importance",
    "half_life_days",
    "parse_created_at",
    "similarity_from_distance",
    "sweep_action",
    "tier_days",
]


#: the one-line legend every surface that prints ``decay_score`` shows under its list
SCORE_LEGEND = (
    "衰减分 = 相似度 1/(1+距离) × 时间衰减（0–1，越大越相关，各模式同一尺度）；"
    "关键词模式不算距离，相似度按 1 计"
)
