"""Importance: 1–10 in storage, ``low | medium | high`` on the tool surface.

The tools keep the reference's three labels; storage keeps the second source's 1–10 so
that calibration (L3) and manual entries can be finer. Labels map to a representative
level, levels map back by tier.
"""

from __future__ import annotations

from typing import Literal

ImportanceLabel = Literal["low", "medium", "high"]

LOW = 3
MEDIUM = 5
HIGH = 8
MIN_LEVEL = 1
MAX_LEVEL = 10

LABEL_TO_LEVEL: dict[str, int] = {"low": LOW, "medium": MEDIUM, "high": HIGH}
LABELS: tuple[ImportanceLabel, ...] = ("low", "medium", "high")


def importance_rank(level: int) -> int:
    """Tier rank of a 1–10 level: 1–3 → 0 (low), 4–7 → 1 (medium), 8–10 → 2 (high).

    Anything outside 1–10 counts as medium, like the reference's unknown label.
    """
    if MIN_LEVEL <= level <= 3:
        return 0
    if 8 <= level <= MAX_LEVEL:
        return 2
    return 1


def level_to_label(level: int) -> ImportanceLabel:
    """The tool-surface label of a stored level."""
    return LABELS[importance_rank(level)]


def label_to_level(label: str) -> int:
    """The stored level of a tool-surface label; raises ``KeyError`` for an unknown label."""
    return LABEL_TO_LEVEL[label]
