"""The ``/memory`` text parser and its argument checks: pure functions, tested (and
fuzzed) without a bot or a database."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from amrita_memory_pg.domain.records import SEARCH_MODES, SearchMode
from amrita_memory_pg.domain.validation import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_QUERY_CHARS,
    InvalidInput,
    check_text,
    parse_category,
    parse_count,
    parse_importance,
)

MEMO_SUBS = frozenset({"memo", "备忘录"})
PROFILE_SUBS = frozenset({"profile", "画像"})
DMN_SUBS = frozenset({"dmn", "run", "触发"})
KNOWLEDGE_SUBS = frozenset({"knowledge", "知识库"})
EXTRACT_SUBS = frozenset({"extract", "提取"})
#: pause / resume a scope's memory (superusers)
PAUSE_SUBS = frozenset({"pause", "resume", "暂停", "恢复"})
#: erase a person's or a chat's data everywhere (superusers)
ERASE_SUBS = frozenset({"erase", "擦除"})
LEGACY_ACTIONS = frozenset({"list", "search", "delete"})


@dataclass(frozen=True, slots=True)
class Options:
    """``-c/--category`` and ``-i/--importance`` of add / list / search, and the rest."""

    category: str | None = None
    importance: int | None = None
    rest: str = ""


_OPTION_NAMES = {
    "-c": "category",
    "--category": "category",
    "类别": "category",
    "-i": "importance",
    "--importance": "importance",
    "重要度": "importance",
}


def parse_options(text: str, *, anywhere: bool = False) -> Options:
    """Options before the text (``anywhere``: between any words, for ``list``); pure.

    ``-c rule``, ``--category=rule``, ``类别=规则``, ``-i 8``, ``--importance=8``.
    Raises :class:`InvalidInput` for an unknown category or an importance outside 1–10.
    """
    words = text.split()
    values: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        name, sep, value = word.partition("=")
        if name in _OPTION_NAMES and (sep or i + 1 < len(words)):
            if not sep:
                value = words[i + 1]
                i += 1
            values[_OPTION_NAMES[name]] = value
            i += 1
            continue
        if not anywhere:
            break
        rest.append(word)
        i += 1
    if not anywhere:
        # the content keeps its own spacing: cut the option words off the front
        remaining = text.strip()
        for _ in range(i):
            remaining = (
                remaining.split(maxsplit=1)[1] if len(remaining.split(maxsplit=1)) > 1 else ""
            )
        rest_text = remaining.strip()
    else:
        rest_text = " ".join(rest)
    category = importance = None
    if "category" in values:
        try:
            category = parse_category(values["category"])
        except InvalidInput as exc:
            raise InvalidInput(f"类别{exc.reason}") from None
    if "importance" in values:
        try:
            importance = parse_importance(values["importance"])
        except InvalidInput as exc:
            raise InvalidInput(f"重要度{exc.reason}") from None
    return Options(category, importance, rest_text)


@dataclass(frozen=True, slots=True)
class Parsed:
    """What one ``/memory …`` asks for, before anything is looked up.

    ``kind``: ``memo``, ``profile`` (``args`` = the rest), ``dmn`` (the hidden L3
    trigger; ``sub`` is the word used),
    ``usage`` (anything unrecognised), or ``action`` on ``scope`` with ``args``.
    """

    kind: Literal[
        "memo", "dmn", "extract", "usage", "action", "profile", "knowledge", "pause", "erase"
    ]
    sub: str = ""
    scope: Literal["user", "group", "global"] = "user"
    action: str = ""
    args: str = ""


def parse_command(text: str, *, in_group: bool) -> Parsed:
    """Split ``/memory`` arguments the reference's way (§12.3); pure, never raises.

    ``sub`` is the first word, lower-cased; a scope (``user``, and ``group`` in a group
    chat) is followed by an action and its arguments; ``list``/``search``/``delete`` alone
    are the legacy form for the user scope. Actions are case-sensitive.
    """
    parts = text.strip().split(maxsplit=1)
    sub = parts[0].lower() if parts else ""
    rest = parts[1].strip() if len(parts) > 1 else ""
    if sub in MEMO_SUBS:
        return Parsed("memo", sub=sub)
    if sub in PROFILE_SUBS:
        return Parsed("profile", sub=sub, args=rest)
    if sub in DMN_SUBS:
        return Parsed("dmn", sub=sub, args=rest)
    if sub in KNOWLEDGE_SUBS:
        action_parts = rest.split(maxsplit=1)
        action = action_parts[0].lower() if action_parts else ""
        args = action_parts[1].strip() if len(action_parts) > 1 else ""
        return Parsed("knowledge", sub=sub, action=action, args=args)
    if sub in EXTRACT_SUBS:
        return Parsed("extract", sub=sub)
    if sub in PAUSE_SUBS:
        return Parsed("pause", sub=sub, args=rest)
    if sub in ERASE_SUBS:
        return Parsed("erase", sub=sub, args=rest)
    if sub in ("user", "global") or (sub == "group" and in_group):
        action_parts = rest.split(maxsplit=1)
        action = action_parts[0] if action_parts else ""
        args = action_parts[1].strip() if len(action_parts) > 1 else ""
        scope: Literal["user", "group", "global"] = (
            "group" if sub == "group" else "global" if sub == "global" else "user"
        )
        return Parsed("action", sub=sub, scope=scope, action=action, args=args)
    if sub in LEGACY_ACTIONS:
        return Parsed("action", sub=sub, scope="user", action=sub, args=rest)
    return Parsed("usage", sub=sub)


#: what each action's argument is called in a refusal, and its cap (the tools' caps)
_ARGUMENTS: dict[str, tuple[str, int]] = {
    "add": ("记忆内容", MAX_CONTENT_CHARS),
    "search": ("搜索关键词", MAX_QUERY_CHARS),
    "delete": ("记忆 ID", MAX_ID_CHARS),
    "forget": ("要忘记的内容", MAX_QUERY_CHARS),
    "clear": ("确认码", 16),
}


def refusal(action: str, args: str) -> str | None:
    """Why ``args`` cannot be used for ``action`` (too long, NUL, lone surrogate), or None.

    The same checks as the tools' arguments, so the command stores nothing a tool would
    refuse — ``/memory user add`` with 100,000 characters (F10) included.
    """
    if action not in _ARGUMENTS or not args:
        return None
    name, cap = _ARGUMENTS[action]
    try:
        check_text(args, max_chars=cap)
    except InvalidInput as exc:
        return f"{name}{exc.reason}"
    return None


def search_mode(args: str) -> tuple[SearchMode | None, str, str | None]:
    """Split ``/memory … search [mode=X] <关键词>``: (mode, query, refusal). Pure.

    No ``mode=`` prefix: (None, args, None), the configured default mode. An unknown
    mode is refused with a sentence listing the three.
    """
    head, _, rest = args.partition(" ")
    if not head.lower().startswith("mode="):
        return None, args, None
    value = head[len("mode=") :].lower()
    for mode in SEARCH_MODES:
        if value == mode:
            return mode, rest.strip(), None
    return (
        None,
        rest.strip(),
        f"未知的检索方式 {value!r}：可用 mode=hybrid、mode=vector、mode=keyword",
    )


def page_number(args: str, pages: int) -> int:
    """``/memory … list <page>``: ASCII digits in 1..pages; anything else is page 1 (F9)."""
    return parse_count(args, lo=1, hi=max(1, pages)) or 1
