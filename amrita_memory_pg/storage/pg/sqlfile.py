"""Statements of a released SQL file, one at a time.

Released files are run whole by their migration. Retiring a function (migration
0022_retire_sql) needs one function out of a file that defines several: its ``DROP``
from the ``.down.sql`` file on the way up, its ``CREATE`` and ``COMMENT`` on the way
back down. So a file is split into statements here, by a scanner that knows where a
``;`` does not end one: inside quotes, dollar quotes (function bodies) and comments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from amrita_memory_pg.resources import read_sql

_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")

#: The head of a statement that defines, documents or drops one function of our schema.
_FUNCTION_HEAD = re.compile(
    r"""^(?:CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION
         |COMMENT\s+ON\s+FUNCTION
         |DROP\s+FUNCTION(?:\s+IF\s+EXISTS)?)
        \s+amrita_memory\.(?P<name>[a-z_][a-z0-9_]*)\s*\(""",
    re.IGNORECASE | re.VERBOSE,
)


def _scan(text: str, *, keep_comments: bool) -> tuple[list[str], str]:
    """Split at top-level ``;``; returns the finished statements and the rest."""
    statements: list[str] = []
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            if keep_comments:
                out.append(text[i:end])
            i = end
        elif ch == "/" and text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            if keep_comments:
                out.append(text[i:j])
            else:
                out.append(" ")
            i = j
        elif ch in "'\"":
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
            statements.append("".join(out).strip())
            out = []
            i += 1
        else:
            out.append(ch)
            i += 1
    return [s for s in statements if s], "".join(out).strip()


def _in_word(text: str, i: int) -> bool:
    """``$1`` or ``a$b`` is not a dollar quote: one follows a word character."""
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def split_statements(text: str) -> list[str]:
    """The statements of a SQL file, comments removed, without their final ``;``."""
    statements, rest = _scan(text, keep_comments=False)
    return [*statements, rest] if rest else statements


def strip_comments(sql: str) -> str:
    """``sql`` without ``--`` and ``/* */`` comments (quoted text kept as it is)."""
    statements, rest = _scan(sql, keep_comments=False)
    return ";\n".join([*statements, rest])


def function_statements(text: str, names: Iterable[str]) -> list[str]:
    """The statements of ``text`` that create, comment on or drop one of ``names``
    (functions of schema ``amrita_memory``), in file order."""
    wanted = set(names)
    picked: list[str] = []
    for statement in split_statements(text):
        match = _FUNCTION_HEAD.match(statement)
        if match and match.group("name") in wanted:
            picked.append(statement)
    return picked


def released_definitions(files: Iterable[str], names: Iterable[str]) -> list[str]:
    """The statements that once installed ``names``: every ``CREATE FUNCTION`` and
    ``COMMENT ON FUNCTION`` of them in ``files`` (paths under ``sql/``), taken in the order
    given, which is the order their migrations ran them (a later comment wins, as it did)."""
    wanted = set(names)
    picked: list[str] = []
    for relative in files:
        for statement in function_statements(read_sql(relative), wanted):
            if not re.match(r"DROP\b", statement, re.IGNORECASE):
                picked.append(statement)
    return picked


def signature_names(signatures: Iterable[str]) -> set[str]:
    """Function names of identity signatures such as ``f_v1(integer,text)``."""
    return {signature.split("(", 1)[0] for signature in signatures}


def reinstall_retired(files: Iterable[str], signatures: tuple[str, ...]) -> list[str]:
    """A retiring migration's downgrade: the CREATE and COMMENT statements of ``files``
    that bring back every retired version — each created by exactly one released file."""
    statements = released_definitions(files, signature_names(signatures))
    created = [s for s in statements if s.upper().startswith("CREATE")]
    assert len(created) == len(signatures), "each retired function is created by one released file"
    return statements
