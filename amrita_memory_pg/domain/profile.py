"""User profiles: a summary plus numbered body lines, and the edits the L3 loop makes.

The reference kept ``{summary}\\n---\\n{body}`` in one file and parsed it twice: read
stripped the body, update did not, so update's line numbers were off by one against
read's and every save added a leading blank line (§15 B2). Here a profile is stored as
its lines (an array); line ``i`` is element ``i`` for the read window
(:func:`read_window`) and for every edit (:func:`apply_edit`) alike, and the one parser
of new text (:func:`split_lines`) never produces the phantom blank lines.

Line numbers are 0-based and ranges end-exclusive, as in the reference's tools
(§4.11, §11.3). Edits:

- append (``start`` and ``end`` both omitted): new lines after the last one;
- replace ``[start, end)`` with the new lines (``start < end``, new lines given);
- insert at ``start`` (``start == end``);
- delete ``[start, end)`` (new lines empty) — the reference could only blank a line.

An edit names both bounds or neither (the reference silently appended when only one
was given); a range outside ``0 ≤ start ≤ end ≤ total`` is refused, not clamped, so a
write never lands somewhere else than asked. Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from amrita_memory_pg.domain.errors import ProfileRefused
from amrita_memory_pg.domain.validation import InvalidInput, check_lines, check_text

EditKind = Literal["append", "replace", "insert", "delete", "summary"]
#: who changed a profile: an operator (CLI), a chat user (/memory), the L3 loop
ActorKind = Literal["cli", "chat", "loop"]


@dataclass(frozen=True, slots=True)
class ProfileActor:
    """Who makes a change, as the history records it; ``cycle_id`` for the loop."""

    kind: ActorKind
    who: str | None = None
    cycle_id: int | None = None


@dataclass(frozen=True, slots=True)
class ProfileChange:
    """One history row. Listings carry line counts only; ``*_lines`` are filled when one
    change is fetched by its version."""

    version: int
    operation: str
    actor_kind: str
    actor: str | None
    cycle_id: int | None
    changed_at: datetime
    old_summary: str
    new_summary: str
    old_count: int
    new_count: int
    old_lines: tuple[str, ...] | None = None
    new_lines: tuple[str, ...] | None = None

    def line(self) -> str:
        """One line of a history listing: version, when, who, what."""
        when = self.changed_at.strftime("%Y-%m-%d %H:%M:%S %Z")
        summary = "" if self.old_summary == self.new_summary else "  (summary changed)"
        return (
            f"v{self.version}  {when}  {self.who()}  {self.operation}  "
            f"lines {self.old_count} -> {self.new_count}{summary}"
        )

    def who(self) -> str:
        """``loop (cycle 42)``, ``cli (alice)``, ``chat (10001)``."""
        if self.actor_kind == "loop":
            return f"loop (cycle {self.cycle_id})"
        return f"{self.actor_kind} ({self.actor})" if self.actor else self.actor_kind


@dataclass(frozen=True, slots=True)
class Profile:
    """One user's profile; ``version`` 0 means there is none yet."""

    summary: str = ""
    lines: tuple[str, ...] = ()
    version: int = 0

    @property
    def total_lines(self) -> int:
        return len(self.lines)

    @property
    def empty(self) -> bool:
        return not self.summary and not self.lines


@dataclass(frozen=True, slots=True)
class ProfileInfo:
    """One line of a profile listing: whose, which version, how long, when last changed."""

    partition_key: str
    version: int
    summary: str
    line_count: int
    updated_at: datetime


class ProfileLimits(Protocol):
    """The caps checked before anything is written: the ``[profile]`` settings section
    itself (declared there, once; the domain does not import the settings)."""

    summary_max_chars: int
    line_max_chars: int
    max_lines: int


@dataclass(frozen=True, slots=True)
class ProfileWindow:
    """A read (§11.2): the summary and the body lines ``[range_start, range_end)``."""

    summary: str
    content: str
    total_lines: int
    range_start: int
    range_end: int

    def reply(self) -> dict[str, Any]:
        """The reference's success reply of read_profile / subconscious_get_profile."""
        return {"status": "success", **asdict(self)}


def read_window(
    profile: Profile, start: int | None = None, end: int | None = None
) -> ProfileWindow:
    """Lines ``[s, e)`` with ``s = clamp(start, 0, total)`` (0 when omitted) and
    ``e = clamp(end, s, total)`` (total when omitted).

    Reading is clamped as in the reference, except that ``s`` never passes ``total``
    (the reference could answer ``range_end < range_start``).
    """
    total = profile.total_lines
    s = 0 if start is None else min(max(0, start), total)
    e = total if end is None else max(s, min(total, end))
    return ProfileWindow(profile.summary, "\n".join(profile.lines[s:e]), total, s, e)


def split_lines(text: str) -> tuple[str, ...]:
    """The one parser of new body text: ``\\r\\n`` and ``\\r`` are line breaks, trailing
    spaces are dropped, and so are blank lines at the start and the end (the leading
    blank line was B2's symptom). Blank lines inside are kept; ``""`` is no lines."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    first = next((i for i, line in enumerate(lines) if line), len(lines))
    last = next((i for i in range(len(lines) - 1, -1, -1) if lines[i]), -1)
    return tuple(lines[first : last + 1])


@dataclass(frozen=True, slots=True)
class ProfileEdit:
    """What one update asks for; ``start``/``end`` both None = append."""

    summary: str
    new_lines: tuple[str, ...]
    start: int | None = None
    end: int | None = None

    @property
    def kind(self) -> EditKind:
        if self.start is None or self.end is None:
            return "append" if self.new_lines else "summary"
        if self.start == self.end:
            return "insert" if self.new_lines else "summary"
        return "replace" if self.new_lines else "delete"


def make_edit(summary: str, new_lines: str, start: int | None, end: int | None) -> ProfileEdit:
    """An update's arguments as an edit; :class:`ProfileRefused` for an impossible one.

    The summary is required and replaces the old one (as in the reference); an empty
    summary is refused, since an LLM that omits it means «keep», not «erase».
    """
    text = summary.strip()
    if not text:
        raise ProfileRefused(
            "summary 不能为空：请传入完整的画像摘要（不想修改摘要时，原样传回当前摘要）"
        )
    if (start is None) != (end is None):
        raise ProfileRefused(
            "start_line 与 end_line 要么都提供（替换 [start_line, end_line) 行；二者相等时为在该行前插入；"
            "new_lines 为空时为删除），要么都不提供（在末尾追加）"
        )
    if start is not None and end is not None:
        if start < 0:
            raise ProfileRefused(f"start_line 不能为负数，收到 {start}（行号从 0 开始）")
        if end < start:
            raise ProfileRefused(
                f"end_line ({end}) 不能小于 start_line ({start})；范围为 [start_line, end_line)，不含 end_line"
            )
    return ProfileEdit(text, split_lines(new_lines), start, end)


def apply_edit(profile: Profile, edit: ProfileEdit) -> Profile:
    """The profile after ``edit``; :class:`ProfileRefused` when its range is outside it.

    ``version`` is the one the edit was applied to (the store sets the new one).
    """
    if edit.start is None or edit.end is None:
        lines = profile.lines + edit.new_lines
    else:
        total = profile.total_lines
        if edit.end > total:
            raise ProfileRefused(
                f"行号范围 [{edit.start}, {edit.end}) 超出画像：当前共 {total} 行，"
                f"有效范围是 0 ≤ start_line ≤ end_line ≤ {total}；请先读取画像确认行号"
            )
        lines = profile.lines[: edit.start] + edit.new_lines + profile.lines[edit.end :]
    return Profile(edit.summary, lines, profile.version)


def describe(edit: ProfileEdit, before: Profile) -> str:
    """The history's ``operation`` text (the reference's log line, per kind)."""
    n = len(edit.new_lines)
    kind = edit.kind
    if kind == "append":
        return f"append {n} lines at {before.total_lines}"
    if kind == "summary":
        return "summary only"
    s, e = edit.start or 0, edit.end or 0
    if kind == "insert":
        return f"insert {n} lines at {s}"
    if kind == "delete":
        return f"delete [{s}:{e}]"
    return f"replace [{s}:{e}] -> [{s}:{s + n}]"


def check_profile(profile: Profile, limits: ProfileLimits) -> None:
    """:class:`ProfileRefused` if the profile breaks a limit or holds unstorable text."""
    try:
        check_text(profile.summary, max_chars=limits.summary_max_chars)
    except InvalidInput as exc:
        raise ProfileRefused(f"画像摘要 summary {exc.reason}") from None
    try:
        check_lines(profile.lines, max_line_chars=limits.line_max_chars, max_lines=limits.max_lines)
    except InvalidInput as exc:
        raise ProfileRefused(f"画像正文{exc.reason}") from None


def check_edit(edit: ProfileEdit, limits: ProfileLimits) -> None:
    """Refuse the new text itself before it is applied (lines numbered within new_lines)."""
    try:
        check_text(edit.summary, max_chars=limits.summary_max_chars)
    except InvalidInput as exc:
        raise ProfileRefused(f"画像摘要 summary {exc.reason}") from None
    try:
        check_lines(
            edit.new_lines,
            max_line_chars=limits.line_max_chars,
            max_lines=limits.max_lines,
        )
    except InvalidInput as exc:
        raise ProfileRefused(f"new_lines 的{exc.reason}") from None


def render_numbered(lines: tuple[str, ...], start: int = 0) -> str:
    """Lines prefixed with their numbers (``0: …``), for people reading a profile."""
    width = len(str(max(start + len(lines) - 1, 0)))
    return "\n".join(f"{start + i:>{width}}: {line}" for i, line in enumerate(lines))


def render_profile_block(summary: str, speaker: str = "") -> str:
    """The profile part of the per-turn block ("" when there is no summary)."""
    if not summary:
        return ""
    who = f"（{speaker}）" if speaker else ""
    return "\n".join(
        (
            f"以下是当前发言人{who}的用户画像摘要，位于<PROFILE>块，只描述这位发言人；"
            "需要细节时可调用 read_profile 读取完整画像。",
            "<PROFILE>",
            summary,
            "</PROFILE>",
        )
    )


#: the reference file's separator between the summary and the body (§11.1)
SEPARATOR = "---"


def parse_profile_file(text: str) -> Profile:
    """The reference plugin's ``user_profile.md`` (``{summary}\n---\n{body}``) as a profile.

    The one parser the reference lacked: the separator is the first line that is exactly
    ``---`` (not the first ``---`` anywhere), the summary is stripped, and the body goes
    through :func:`split_lines` like every other new text — no phantom blank line. A file
    without a separator line is all summary.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    cut = next((i for i, line in enumerate(lines) if line.strip() == SEPARATOR), len(lines))
    summary = "\n".join(lines[:cut]).strip()
    return Profile(summary, split_lines("\n".join(lines[cut + 1 :])))


def render_profile_file(profile: Profile) -> str:
    """A profile in the reference's file format (what :func:`parse_profile_file` reads)."""
    return f"{profile.summary}\n{SEPARATOR}\n" + "\n".join(profile.lines)
