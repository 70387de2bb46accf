"""Statements of a SQL file, one at a time, and where each stands in the file.

A fresh install runs the live files of ``sql/functions`` in two passes (every function
first, then the triggers and views: ``install.py``), and the release step cuts a retired
function's definition out of its file. Both need a file split into statements, by a
scanner that knows where a ``;`` does not end one: inside quotes, dollar quotes (function
bodies) and comments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")

#: The head of a statement that defines or documents a function or view of our schema.
_DEFINITION_HEAD = re.compile(
    r"""^(?P<verb>CREATE(?:\s+OR\s+REPLACE)?|COMMENT\s+ON)\s+(?P<kind>FUNCTION|VIEW)
        \s+amrita_memory\.(?P<name>[a-z_][a-z0-9_]*)\b""",
    re.IGNORECASE | re.VERBOSE,
)


@dataclass(frozen=True)
class Statement:
    """One statement: its text without comments or final ``;``, and its span in the file
    (from its first character to just after its ``;``)."""

    sql: str
    start: int
    end: int


def scan(text: str) -> list[Statement]:
    """The statements of ``text`` in order; the last one may lack its ``;``."""
    statements: list[Statement] = []
    out: list[str] = []
    start: int | None = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if ch == "/" and text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(" ")
            i = j
            continue
        if start is None and not ch.isspace() and ch != ";":
            start = i
        if ch in "'\"":
            escapes = ch == "'" and i > 0 and text[i - 1] in "Ee"
            j = i + 1
            while j < n:
                if escapes and text[j] == "\\":
                    j += 2
                    continue
                if text[j] == ch:
                    if text.startswith(ch * 2, j):
                        j += 2
                        continue
                    break
                j += 1
            out.append(text[i : j + 1])
            i = j + 1
        elif ch == "$" and (match := _DOLLAR.match(text, i)) and not _in_word(text, i):
            tag = match.group(0)
            end = text.find(tag, match.end())
            end = n if end < 0 else end + len(tag)
            out.append(text[i:end])
            i = end
        elif ch == ";":
            sql = "".join(out).strip()
            if sql and start is not None:
                statements.append(Statement(sql, start, i + 1))
            out, start = [], None
            i += 1
        else:
            out.append(ch)
            i += 1
    rest = "".join(out).strip()
    if rest and start is not None:
        statements.append(Statement(rest, start, n))
    return statements


def _in_word(text: str, i: int) -> bool:
    """``$1`` or ``a$b`` is not a dollar quote: one follows a word character."""
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def split_statements(text: str) -> list[str]:
    """The statements of a SQL file, comments removed, without their final ``;``."""
    return [statement.sql for statement in scan(text)]


def strip_comments(sql: str) -> str:
    """``sql`` without ``--`` and ``/* */`` comments (quoted text kept as it is)."""
    return ";\n".join(split_statements(sql))


class Defined(NamedTuple):
    """What a statement defines: ``verb`` create | comment, ``kind`` function | view."""

    verb: str
    kind: str
    name: str


def defined_name(statement: str) -> Defined | None:
    """What ``statement`` creates or comments on, when it is a function or view of our
    schema; else None."""
    match = _DEFINITION_HEAD.match(statement)
    if match is None:
        return None
    verb = "comment" if match.group("verb").upper().startswith("COMMENT") else "create"
    return Defined(verb, match.group("kind").lower(), match.group("name"))


def defines_function(statement: str) -> bool:
    """Whether ``statement`` creates or comments on a function of our schema."""
    match = _DEFINITION_HEAD.match(statement)
    return match is not None and match.group("kind").upper() == "FUNCTION"


def preamble_start(text: str, start: int) -> int:
    """Where the comment lines directly above ``start`` begin (no blank line between):
    a definition's own comment, which goes with it when it is cut out of its file."""
    line_start = text.rfind("\n", 0, start) + 1
    while line_start > 0:
        previous = text.rfind("\n", 0, line_start - 1) + 1
        if not text[previous : line_start - 1].lstrip().startswith("--"):
            break
        line_start = previous
    return line_start
