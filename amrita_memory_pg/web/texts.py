"""Values stored in English words, shown in the reader's language.

Some rows keep a short English description written by the core (a profile change's
``operation``, its actor); the page reads them back into an i18n key and its values.
A text none of the patterns knows is shown as it is (a newer core's wording is not an
error, only an untranslated line).
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: the forms of :func:`amrita_memory_pg.domain.profile.describe` and of a revert
_OPERATIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^append (?P<n>\d+) lines at (?P<at>\d+)$"), "profile.op.append"),
    (re.compile(r"^insert (?P<n>\d+) lines at (?P<at>\d+)$"), "profile.op.insert"),
    (re.compile(r"^delete \[(?P<start>\d+):(?P<end>\d+)\]$"), "profile.op.delete"),
    (
        re.compile(r"^replace \[(?P<start>\d+):(?P<end>\d+)\] -> \[\d+:(?P<new_end>\d+)\]$"),
        "profile.op.replace",
    ),
    (re.compile(r"^summary only$"), "profile.op.summary"),
    (re.compile(r"^revert to v(?P<version>\d+)$"), "profile.op.revert"),
)
_ACTORS = ("chat", "cli", "loop", "web", "import", "system")


def profile_operation(text: str, t: Callable[..., str]) -> str:
    """A profile history row's ``operation`` in the reader's language."""
    for pattern, key in _OPERATIONS:
        found = pattern.match(text)
        if found:
            return t(key, **found.groupdict())
    return text


def profile_actor(kind: str, actor: str | None, cycle_id: int | None, t: Callable[..., str]) -> str:
    """Who changed a profile: the kind translated, the id as it is."""
    name = t(f"profile.actor.{kind}") if kind in _ACTORS else kind
    if kind == "loop":
        return t("profile.actor.loop_cycle", name=name, cycle=cycle_id)
    return f"{name} ({actor})" if actor else name
