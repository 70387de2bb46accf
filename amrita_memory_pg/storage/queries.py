"""The runtime SQL statements, loaded by name from ``sql/queries/*.sql``.

Each file holds named blocks in the procrastinate style::

    -- name: get_memo
    -- The memo of one partition (a primary-key lookup).
    SELECT content, version, updated_at FROM amrita_memory.memo WHERE partition_key = $1;

A block is one statement. The comment lines right under the header say what it does
and why; they are kept as the query's ``doc`` and left out of the SQL sent to the
server. Names are global across files (the file name is only the area), so a caller
says ``query("get_memo")`` and never where it lives.

The files are read once per process, on first use. A duplicate name, a block without
its comment or without a statement, or a lookup of a name that does not exist fails
loudly: these are bugs in the package, never conditions to handle at run time (so they
raise ``ValueError``/``KeyError``, not the product's error tree). The integration test
``tests/integration/test_queries.py`` PREPAREs every statement against the migrated
schema, so a query that no longer fits the schema fails the suite, not a user.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from amrita_memory_pg.resources import sql_dir

_HEADER = re.compile(r"^--\s*name:\s*(?P<name>\S+)\s*$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class NamedQuery:
    name: str
    #: the statement as sent to the server (no header, no leading comment, no final ";")
    sql: str
    #: the comment under the header, without the ``--`` markers
    doc: str
    #: the file and line of the header, for error messages
    origin: str


class UnknownQuery(KeyError):
    """``query(name)`` with a name that no file under ``sql/queries/`` defines."""

    def __str__(self) -> str:  # KeyError's default repr-quotes the whole message
        return str(self.args[0])


def queries_dir() -> Path:
    """Directory of the named-query files (``sql/queries``)."""
    return sql_dir() / "queries"


def parse_file(path: Path) -> list[NamedQuery]:
    """The named blocks of one file, in file order.

    Text before the first header may only be comments (a file's own header). Raises
    ``ValueError`` naming the file and line for anything malformed.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[NamedQuery] = []
    current: tuple[str, int] | None = None
    body: list[str] = []

    def close() -> None:
        if current is None:
            return
        name, line_no = current
        found.append(_block(name, body, f"{path.name}:{line_no}"))

    for number, line in enumerate(lines, start=1):
        match = _HEADER.match(line)
        if match:
            close()
            name = match.group("name")
            if not _NAME.match(name):
                raise ValueError(
                    f"{path.name}:{number}: query name {name!r} is not lower_snake_case"
                )
            current, body = (name, number), []
        elif current is None:
            if line.strip() and not line.lstrip().startswith("--"):
                raise ValueError(f"{path.name}:{number}: SQL before the first '-- name: …' header")
        else:
            body.append(line)
    close()
    return found


def _block(name: str, body: list[str], origin: str) -> NamedQuery:
    doc: list[str] = []
    rest = list(body)
    while rest and (not rest[0].strip() or rest[0].lstrip().startswith("--")):
        line = rest.pop(0).strip()
        if line.startswith("--"):
            doc.append(line[2:].strip())
    sql = "\n".join(rest).strip()
    sql = sql.removesuffix(";").rstrip()
    if not any(doc):
        raise ValueError(f"{origin}: query {name!r} needs a '-- ' comment under its header")
    if not sql:
        raise ValueError(f"{origin}: query {name!r} has no statement")
    return NamedQuery(name=name, sql=sql, doc="\n".join(doc).strip(), origin=origin)


def load_queries(directory: Path) -> Mapping[str, NamedQuery]:
    """Every named query of every ``*.sql`` file in ``directory``; names must be unique."""
    catalogue: dict[str, NamedQuery] = {}
    for path in sorted(directory.glob("*.sql")):
        for item in parse_file(path):
            if item.name in catalogue:
                raise ValueError(
                    f"query {item.name!r} is defined twice: {catalogue[item.name].origin} "
                    f"and {item.origin}"
                )
            catalogue[item.name] = item
    return MappingProxyType(catalogue)


@cache
def catalogue() -> Mapping[str, NamedQuery]:
    """All named queries shipped with the package (read once per process)."""
    return load_queries(queries_dir())


def query(name: str) -> str:
    """The SQL of the named query; raises :class:`UnknownQuery` for a name no file defines."""
    try:
        return catalogue()[name].sql
    except KeyError:
        close = difflib.get_close_matches(name, list(catalogue()), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownQuery(f"no query named {name!r} under {queries_dir()}{hint}") from None


#: a function argument in named notation: ``p_partition => $1``
_NAMED_ARG = re.compile(r"\b(?P<name>p_[a-z0-9_]+)\s*=>\s*\$(?P<n>[0-9]+)\b")


@cache
def named_params(name: str) -> tuple[str, ...]:
    """The argument names a named query passes in named notation (``p_x => $n``), in the
    order of their ``$n``: the order :func:`bind` sends the values in."""
    pairs = sorted((int(m["n"]), m["name"]) for m in _NAMED_ARG.finditer(catalogue()[name].sql))
    if [n for n, _ in pairs] != list(range(1, len(pairs) + 1)):
        raise ValueError(f"query {name!r}: named arguments must be $1..$n, each once")
    return tuple(arg for _, arg in pairs)


def bind(name: str, args: Mapping[str, Any]) -> list[Any]:
    """The values of ``args`` (argument name -> value) in the order query ``name`` takes
    them: a statement calling a SQL function by argument name (``p_x => $n``) is bound
    by name, never by position. The names must be exactly the statement's (a missing or
    an extra one is a bug: ``ValueError``)."""
    names = named_params(name)
    if set(args) != set(names):
        missing = sorted(set(names) - set(args))
        extra = sorted(set(args) - set(names))
        raise ValueError(f"query {name!r}: arguments missing {missing}, unknown {extra}")
    return [args[n] for n in names]
