"""What the admin page's operations pages show, gathered from the services (no SQL here).

Framework-free: each function takes the open :class:`~amrita_memory_pg.memory.Memory`
(and the time, where it matters) and returns plain dataclasses a template renders —
knowledge entries and the suggestion queue, profiles and their history, L3 runs with
each target's next window and 7 × 12 heatmap, and the store's status (the data of
``amrita-memory status``, :mod:`amrita_memory_pg.maintenance.status`). The writes these
pages make go through the services themselves (``mem.knowledge``, ``mem.profiles``),
which validate with :mod:`amrita_memory_pg.domain.validation`; the few helpers here only
turn form text into their arguments with the same checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo

from amrita_memory_pg.domain.activity import DAYS, SLOT_MINUTES, SLOTS_PER_DAY
from amrita_memory_pg.domain.errors import KnowledgeError, ProfileRefused
from amrita_memory_pg.domain.keys import user_key
from amrita_memory_pg.domain.knowledge import KnowledgeEntry, KnowledgeInfo, Suggestion
from amrita_memory_pg.domain.planner import WEEKDAY_NAMES, Plan, decay, slot_of
from amrita_memory_pg.domain.profile import (
    Profile,
    ProfileActor,
    ProfileChange,
    ProfileInfo,
)
from amrita_memory_pg.domain.scheduling import TargetState, plan_from_dict
from amrita_memory_pg.domain.validation import InvalidInput, parse_count, parse_int
from amrita_memory_pg.maintenance.status import (
    StatusReport,
    collect_server_status,
    collect_store_status,
)
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.profiles import ProfileUpdate
from amrita_memory_pg.storage.consolidation import CycleRow
from amrita_memory_pg.storage.queries import query

#: rows per page of the profile and run lists
PER_PAGE = 25
#: suggestions listed on the knowledge page (the queue is bounded by knowledge_suggest_max)
SUGGESTIONS_SHOWN = 100
#: history rows shown on a profile page
HISTORY_SHOWN = 50
#: colour steps of a heatmap cell (0 = no activity)
HEAT_LEVELS = 5


def page_number(text: str | None, *, last: int = 10_000) -> int:
    """A ``?page=`` value typed by a person: 1 when absent or not a number."""
    return parse_count(text or "", lo=1, hi=last) or 1


def pages(total: int, per_page: int = PER_PAGE) -> int:
    return max(1, -(-total // per_page))


# ---------------------------------------------------------------------------- knowledge


@dataclass(frozen=True, slots=True)
class KnowledgePage:
    enabled: bool
    entries: list[KnowledgeInfo]
    #: unhandled suggestions (pending + claimed by a running cycle)
    pending_total: int
    suggestions: list[Suggestion]


async def knowledge_page(mem: Memory) -> KnowledgePage:
    """Every entry (no bodies) and the unhandled suggestions, oldest first."""
    entries = await mem.cases.knowledge.entries()
    total, rows = await mem.cases.knowledge.pending_suggestions(SUGGESTIONS_SHOWN)
    suggestions = [
        Suggestion(
            id=int(r["id"]),
            action=r["action"],
            kid=r["kid"],
            title=r["title"],
            summary=r["summary"],
            body="",
            reason=r["reason"],
            author_id=r["author_id"],
            created_at=r["created_at"],
            status=r["status"],
        )
        for r in rows
    ]
    return KnowledgePage(mem.cases.knowledge.enabled, entries, total, suggestions)


@dataclass(frozen=True, slots=True)
class SuggestionView:
    suggestion: Suggestion
    #: the entry an update suggestion would change (None for a create, or when it is gone)
    current: KnowledgeEntry | None


async def knowledge_entry(mem: Memory, kid: str) -> KnowledgeEntry:
    """One entry with its body; :class:`KnowledgeNotFound` when there is none."""
    return await mem.cases.knowledge.get(kid)


async def suggestion_view(mem: Memory, suggestion_id: str) -> SuggestionView:
    """One suggestion with its body, and the entry it would update."""
    found = await mem.cases.knowledge.suggestion(suggestion_number(suggestion_id))
    current = None
    if found.action == "update" and found.kid:
        try:
            current = await mem.cases.knowledge.get(found.kid)
        except KnowledgeError:
            current = None
    return SuggestionView(found, current)


def suggestion_number(text: str) -> int:
    """A suggestion id from a URL or form (a positive integer), else :class:`KnowledgeError`."""
    try:
        number = parse_int(text)
    except InvalidInput as exc:
        raise KnowledgeError(f"suggestion id {exc.reason}") from exc
    if number <= 0:
        raise KnowledgeError(f"suggestion id 应为正整数，收到 {number}")
    return number


# ---------------------------------------------------------------------------- profiles


@dataclass(frozen=True, slots=True)
class ProfilesPage:
    total: int
    page: int
    pages: int
    profiles: list[ProfileInfo]


async def profiles_page(mem: Memory, page: int = 1) -> ProfilesPage:
    """A page of profiles, the most recently changed first."""
    total, rows = await mem.cases.profiles.listing(PER_PAGE, (page - 1) * PER_PAGE)
    return ProfilesPage(total, page, pages(total), rows)


def profile_key(text: str) -> str:
    """A personal partition key from what an operator typed (the key, or a QQ number);
    :class:`ProfileRefused` for anything else (groups have no profile)."""
    key = user_key(text.strip()) if text.strip() else None
    if key is None:
        raise ProfileRefused(
            f"{text.strip()[:64]!r} 不是用户：请给出个人分区键（QQPlatform_Private_10001）或 QQ 号；群没有画像"
        )
    return key


@dataclass(frozen=True, slots=True)
class ProfileDetail:
    partition_key: str
    profile: Profile
    #: the kept changes, newest first (line counts only)
    history: list[ProfileChange]
    #: the change asked for with ``?version=`` with its lines before and after
    selected: ProfileChange | None = None


async def profile_detail(mem: Memory, key: str, version: str | None = None) -> ProfileDetail:
    """A profile, its history, and one change in full when ``version`` names one."""
    partition_key = profile_key(key)
    profile = await mem.cases.profiles.get(partition_key)
    history = await mem.cases.profiles.history(partition_key, HISTORY_SHOWN)
    selected = None
    if version:
        selected = await mem.cases.profiles.change(partition_key, revert_version(version))
    return ProfileDetail(partition_key, profile, history, selected)


def revert_version(text: str) -> int:
    """A version number from a form (0 = before the first change)."""
    try:
        number = parse_int(text)
    except InvalidInput as exc:
        raise ProfileRefused(f"version {exc.reason}") from exc
    if number < 0:
        raise ProfileRefused(f"版本号不能为负数，收到 {number}")
    return number


def web_actor(who: str) -> ProfileActor:
    """The history's author of a change made on the admin page: an operator (``cli`` is
    the operator kind of ``profile_history.actor_kind``) named ``web:<login name>``."""
    return ProfileActor(kind="cli", who=f"web:{who}")


async def revert_profile(mem: Memory, key: str, version: str, *, who: str) -> ProfileUpdate:
    """Restore the content at ``version`` as a new change (the service checks the rest)."""
    return await mem.cases.profiles.revert(
        profile_key(key), revert_version(version), web_actor(who)
    )


# ---------------------------------------------------------------------------- L3


@dataclass(frozen=True, slots=True)
class HeatCell:
    weekday: int
    slot: int
    value: float
    #: 0 (no activity) .. HEAT_LEVELS - 1 (the busiest cell)
    level: int
    #: inside the next planned window
    planned: bool

    @property
    def label(self) -> str:
        start = self.slot * SLOT_MINUTES
        end = start + SLOT_MINUTES
        return (
            f"{WEEKDAY_NAMES[self.weekday]} {start // 60:02d}:00–{end // 60:02d}:00 "
            f"{self.value:.2f}"
        )


def window_cells(window: Plan, tz: tzinfo) -> set[tuple[int, int]]:
    """The (weekday, slot) cells a planned window touches, in the planner's zone."""
    cells: set[tuple[int, int]] = set()
    moment = window.start.astimezone(tz)
    end = window.end.astimezone(tz)
    for _ in range(DAYS * SLOTS_PER_DAY):
        if moment >= end:
            break
        cells.add(slot_of(moment, tz))
        local = moment
        into = (local.hour * 60 + local.minute) % SLOT_MINUTES
        moment = (local + timedelta(minutes=SLOT_MINUTES - into)).replace(second=0, microsecond=0)
    return cells


def heat_grid(
    values: list[list[float]], planned: set[tuple[int, int]] | None = None
) -> list[list[HeatCell]]:
    """``values[weekday][slot]`` as cells with a colour level relative to the busiest."""
    top = max((v for row in values for v in row), default=0.0)
    planned = planned or set()
    grid = []
    for wd in range(DAYS):
        row = []
        for slot in range(SLOTS_PER_DAY):
            value = float(values[wd][slot])
            level = 0
            if value > 0 and top > 0:
                level = 1 + min(HEAT_LEVELS - 2, int((HEAT_LEVELS - 1) * value / top))
            row.append(HeatCell(wd, slot, value, level, (wd, slot) in planned))
        grid.append(row)
    return grid


@dataclass(frozen=True, slots=True)
class TargetView:
    target_key: str
    state: TargetState | None
    plan: Plan | None
    grid: list[list[HeatCell]]
    #: where the grid comes from: ``planner`` (the decayed layers the planner uses),
    #: ``activity`` (raw message counts, before the target's first L3 message), ``empty``
    source: str
    next_run_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class L3Page:
    enabled: bool
    timezone: str
    targets: list[TargetView]
    runs_total: int
    page: int
    pages: int
    runs: list[CycleRow] = field(default_factory=list)
    #: the run list's filter (None = every target)
    target: str | None = None
    #: while the loop is off: (targets, runs) of the kept L3 states, e.g. imported ones
    kept_states: tuple[int, int] = (0, 0)


async def target_view(mem: Memory, target_key: str, now: datetime) -> TargetView:
    """A target's stored state, its next window and the heatmap the planner works on."""
    rules = mem.scheduling.rules
    state = await mem.scheduling.state(target_key)
    window = None
    if state is not None and state.plan:
        try:
            window = plan_from_dict(state.plan)
        except (KeyError, TypeError, ValueError):
            window = None
    planned = window_cells(window, rules.tz) if window is not None else set()
    if state is not None and state.heat.last_update > 0:
        heat = decay(state.heat, now, rules.planner)
        values = [
            list(heat.fine[wd * SLOTS_PER_DAY : (wd + 1) * SLOTS_PER_DAY]) for wd in range(DAYS)
        ]
        source = "planner"
    else:
        counts = await mem.activity.heatmap(target_key)
        values = [[float(v) for v in row] for row in counts]
        source = "activity" if any(v for row in counts for v in row) else "empty"
    return TargetView(
        target_key=target_key,
        state=state,
        plan=window,
        grid=heat_grid(values, planned),
        source=source,
        next_run_at=state.next_run_at if state is not None else None,
    )


async def l3_page(
    mem: Memory, now: datetime, *, target: str | None = None, page: int = 1
) -> L3Page:
    """The configured targets with their windows and heatmaps, and a page of runs."""
    targets = [await target_view(mem, key, now) for key in mem.scheduling.targets]
    wanted = target.strip() if target and target.strip() else None
    total, runs = await mem.consolidation.cycles(wanted, PER_PAGE, (page - 1) * PER_PAGE)
    kept = (0, 0)
    if not mem.scheduling.enabled:
        # an imported store holds the old loop's state: say it and how to carry L3 over
        row = await mem.pool.fetchrow(query("l3_states_with_runs"))
        kept = (row["targets"], row["runs"]) if row is not None else (0, 0)
    return L3Page(
        kept_states=kept,
        enabled=mem.scheduling.enabled,
        timezone=mem.scheduling.rules.tz_name,
        targets=targets,
        runs_total=total,
        page=page,
        pages=pages(total),
        runs=runs,
        target=wanted,
    )


# ---------------------------------------------------------------------------- status


async def status_report(mem: Memory) -> StatusReport:
    """What ``amrita-memory status`` shows, from the serving process's own store."""
    report = await collect_server_status(mem.settings, mem.database.target)
    if report.revision == report.head:
        await collect_store_status(mem.store, report)
    return report
