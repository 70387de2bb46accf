"""Values stored in English words, shown in the reader's language.

Some rows keep a short English description written by the core (a profile change's
``operation``, its actor); the page reads them back into an i18n key and its values.
A text none of the patterns knows is shown as it is (a newer core's wording is not an
error, only an untranslated line).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

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


#: the surfaces a person acts through, as the core names them in an actor id
#: (``cli:root``, ``web:ops``: :func:`amrita_memory_pg.cli.app.run_async`, the pages)
_SURFACES = ("cli", "web")


def person(actor_id: str, t: Callable[..., str]) -> str:
    """A person's actor id in words: ``web:ops`` → «网页上的 ops», ``cli:root`` → «命令行的
    root»; any other id as it is (a chat user's number, a session key)."""
    surface, sep, name = actor_id.partition(":")
    if sep and surface in _SURFACES and name:
        return t(f"actor.via.{surface}", name=name)
    return actor_id


def profile_actor(kind: str, actor: str | None, cycle_id: int | None, t: Callable[..., str]) -> str:
    """Who changed a profile: the kind translated, the id in words when it names a
    person on a surface (a person's change through the CLI or the page says only that)."""
    if kind == "loop":
        name = t("profile.actor.loop")
        return t("profile.actor.loop_cycle", name=name, cycle=cycle_id)
    if actor and person(actor, t) != actor:
        return person(actor, t)
    name = t(f"profile.actor.{kind}") if kind in _ACTORS else kind
    return f"{name}（{actor}）" if actor else name


def table_counts(counts: Mapping[str, object], t: Callable[..., str]) -> str:
    """Rows per table of a backup or a restore in words: «记忆 10，备忘录 1，…», the empty
    tables left out (a store has twenty); a table the locale does not name (a newer
    core's) under its own name."""
    parts = []
    for table, rows in counts.items():
        if not rows:
            continue
        key = f"backups.kind.{table}"
        label = t(key)
        parts.append(f"{table if label == key else label} {rows}")
    return t("list.sep").join(parts) or "0"
