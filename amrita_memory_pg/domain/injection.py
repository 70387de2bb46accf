"""The "## Bot Memories" block: which memories fit the token budget, and how
they read. Pure: the candidates, the clock and the token counter are arguments.

Order (the second source): importance first, then the most recently updated. When the
lines do not all fit in ``budget`` tokens, the ones evicted are those with the lowest
recency-decay score

    score = importance × 0.5 ^ (days since the last update / half_life_days)

(importance 1–10, so a memory of 8 untouched for one half-life ties a fresh 4): greedy
by score, each line kept if it still fits, so a long low-score line never pushes out
several short important ones. The kept lines are then shown in importance/recency
order. Memories relevant to the current message (when asked for) are considered first.
Only the lines are counted; the fixed header is a few dozen tokens on top.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from amrita_memory_pg.domain.keys import GLOBAL_KEY

#: A tokenizer: text → number of tokens.
TokenCounter = Callable[[str], int]

HEADER = "## Bot Memories"
INTRO = "以下是你的长期记忆（按重要度排列，只读参考；需要修改时用记忆工具）："
RELEVANT_HEADER = "### 与当前消息相关"
LOADED_INTRO = "已装载的其他作用域（只读，memory_unload_context 可卸载）："
#: a budget this close to full takes no further line (no line is shorter)
MIN_LINE_TOKENS = 4


class Candidate(NamedTuple):
    """A memory the block may show (a named tuple: the block builds 200 a turn, and a
    frozen dataclass's __init__ cost ~2 µs each, bench/bench_injection.py)."""

    id: str
    partition_key: str
    content: str
    importance: int
    category: str | None
    #: last update, seconds since the epoch (a float: the block reads 200 of these a turn,
    #: and decoding 200 timestamptz into datetimes cost ~0.4 ms, bench/bench_injection.py)
    updated_epoch: float


def recency_score(importance: int, age_days: float, half_life_days: float) -> float:
    """importance × 0.5^(age / half-life); age below 0 (clock skew) counts as 0."""
    return float(importance * 0.5 ** (max(age_days, 0.0) / half_life_days))


def priority_key(c: Candidate) -> tuple[int, float, str]:
    """Importance desc, then most recently updated, then id (deterministic)."""
    return (-c.importance, -c.updated_epoch, c.id)


def line_of(
    c: Candidate, scope_labels: Mapping[str, str], category_names: Mapping[str, str]
) -> str:
    """``- [全局][学到的规则][8] 部署前必须先跑测试`` (newlines flattened)."""
    scope = scope_labels.get(c.partition_key, c.partition_key)
    named = category_names.get(c.category) if c.category else None
    category = f"[{named}]" if named else ""
    text = " ".join(c.content.split())
    return f"- [{scope}]{category}[{c.importance}] {text}"


@dataclass(frozen=True, slots=True)
class Kept:
    """One memory the block shows: its line, what the line costs, whether it was kept
    as relevant to the message (the inspector and the access log read these)."""

    candidate: Candidate
    line: str
    tokens: int
    relevant: bool


@dataclass(frozen=True, slots=True)
class Selection:
    """The lines kept, in display order, and what the budget cost."""

    lines: list[str]
    relevant_lines: list[str]
    tokens: int
    evicted: int
    #: the kept memories in display order (plain lines first, then the relevant ones)
    kept: tuple[Kept, ...] = ()


def select(
    candidates: Sequence[Candidate],
    *,
    budget: int,
    count: TokenCounter,
    now: datetime,
    half_life_days: float,
    scope_labels: Mapping[str, str],
    category_names: Mapping[str, str],
    relevant: Sequence[Candidate] = (),
) -> Selection:
    """The lines within ``budget`` tokens: relevant ones first, then by recency-decay score."""
    seen: set[str] = set()
    pool: list[tuple[bool, Candidate]] = []
    for is_relevant, group in ((True, relevant), (False, candidates)):
        for c in group:
            if c.id not in seen:
                seen.add(c.id)
                pool.append((is_relevant, c))

    now_epoch = now.timestamp()

    def score(item: tuple[bool, Candidate]) -> tuple[bool, float, tuple[int, float, str]]:
        is_relevant, c = item
        age = (now_epoch - c.updated_epoch) / 86400.0
        return (not is_relevant, -recency_score(c.importance, age, half_life_days), priority_key(c))

    kept: list[tuple[bool, Candidate, str, int]] = []
    used = 0
    for is_relevant, c in sorted(pool, key=score):
        if budget - used < MIN_LINE_TOKENS:
            break
        line = line_of(c, scope_labels, category_names)
        cost = count(line)
        if used + cost <= budget:
            kept.append((is_relevant, c, line, cost))
            used += cost
    kept.sort(key=lambda item: priority_key(item[1]))
    shown = [k for k in kept if not k[0]] + [k for k in kept if k[0]]
    return Selection(
        lines=[line for is_relevant, _, line, _ in kept if not is_relevant],
        relevant_lines=[line for is_relevant, _, line, _ in kept if is_relevant],
        tokens=used,
        evicted=len(pool) - len(kept),
        kept=tuple(Kept(c, line, cost, is_relevant) for is_relevant, c, line, cost in shown),
    )


def scope_labels_for(
    *, group_key: str | None, personal_key: str, loaded: Iterable[str]
) -> dict[str, str]:
    """How each partition is named in the block: 全局, 本群, 个人, 装载·key."""
    labels = {GLOBAL_KEY: "全局", personal_key: "个人"}
    if group_key:
        labels[group_key] = "本群"
    for key in loaded:
        labels.setdefault(key, f"装载·{key}")
    return labels


def render_bot_memories(selection: Selection, loaded: Sequence[str]) -> str:
    """The block's text, or "" when there is nothing to show."""
    if not selection.lines and not selection.relevant_lines and not loaded:
        return ""
    parts = [HEADER, INTRO]
    parts.extend(selection.lines)
    if selection.relevant_lines:
        parts.append(RELEVANT_HEADER)
        parts.extend(selection.relevant_lines)
    if loaded:
        parts.append(LOADED_INTRO + "、".join(loaded))
    return "\n".join(parts)
