"""Which SQL functions of schema ``amrita_memory`` are live, and which are orphans.

A function is live when something still calls it:

- the Python of this checkout: a named query (``sql/queries/*.sql``) whose name is a
  string in the code, or any other non-docstring string of the code naming it. Read at
  call time, so a new ``_vN`` that the code starts to call is live without any list;
- the previous release (``sql/PREVIOUS_RELEASE.txt``): during a rolling upgrade its
  processes run beside the new ones on the upgraded schema, so what it calls stays;
- the database itself: a trigger, view, column default, index or constraint that uses it
  (``pg_depend``);
- another live function: its body names it (``prosrc``, comments removed) or depends on
  it (``pg_depend``, ``BEGIN ATOMIC`` bodies). Followed transitively.

Everything else installed in the schema is an orphan: delete it from its live file and
let a migration drop it. A function live only because the previous release calls it is
marked in its live file (a ``-- previous release`` line right above its definition):
the release step (``tests/support/release.py``) drops exactly the marked ones.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import asyncpg

from amrita_memory_pg.resources import sql_dir
from amrita_memory_pg.storage.pg.sqlfile import defined_name, preamble_start, scan, strip_comments
from amrita_memory_pg.storage.queries import catalogue

ROOT = Path(__file__).resolve().parents[2]
#: The Python that runs against the database: the package, the bench scripts, the bot.
PYTHON_SOURCES: tuple[Path, ...] = (ROOT / "amrita_memory_pg", ROOT / "bench", ROOT / "bot.py")
#: The Python a release ships: what decides which functions the next release keeps (a
#: bench that still calls an old version does not keep it installed).
PACKAGE_SOURCES: tuple[Path, ...] = (ROOT / "amrita_memory_pg", ROOT / "bot.py")
PREVIOUS_RELEASE = sql_dir() / "PREVIOUS_RELEASE.txt"
LIVE_DIR = sql_dir() / "functions"
#: The line that marks a definition kept for the previous release, right above it.
PREVIOUS_MARK = re.compile(r"^--\s*previous release\b", re.IGNORECASE | re.MULTILINE)

#: A versioned name: every function of ours is ``<name>_v<N>`` (a change of behaviour is
#: a new version: the previous release still calls the old one), so this is how code
#: names one.
VERSIONED_NAME = re.compile(r"\b[a-z][a-z0-9_]*_v[0-9]+\b")

SCHEMA = "amrita_memory"


def _python_files(sources: Iterable[Path]) -> Iterator[Path]:
    for source in sources:
        if source.is_dir():
            yield from sorted(source.rglob("*.py"))
        elif source.is_file():
            yield source


def docstring_ids(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of a module, its classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                found.add(id(body[0].value))
    return found


def python_strings(sources: Iterable[Path] = PYTHON_SOURCES) -> set[str]:
    """Every string constant of the code (f-strings by their literal parts), docstrings
    and comments left out: prose that cites an old version calls nothing."""
    strings: set[str] = set()
    for path in _python_files(sources):
        strings |= _file_strings(path, path.stat().st_mtime_ns)
    return strings


@cache
def _file_strings(path: Path, _mtime: int) -> frozenset[str]:
    """The strings of one file (parsed once per version of it: the suite asks often)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = docstring_ids(tree)
    return frozenset(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    )


def python_calls(sources: Iterable[Path] = PYTHON_SOURCES) -> set[str]:
    """Function names the Python calls: through the named queries it loads by name
    (``query("name")``), or in SQL written in a string of its own."""
    strings = python_strings(sources)
    texts = [item.sql for name, item in catalogue().items() if name in strings]
    texts += strings
    return {name for text in texts for name in VERSIONED_NAME.findall(strip_comments(text))}


def read_previous_release(path: Path = PREVIOUS_RELEASE) -> frozenset[str]:
    """The functions the previous release's Python calls (one name a line, ``#`` comments)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text("utf-8").splitlines())
    return frozenset(line for line in lines if line)


def render_previous_release(names: Iterable[str], version: str) -> str:
    """The text of ``sql/PREVIOUS_RELEASE.txt`` once ``version`` is released."""
    header = f"""\
# The SQL functions {version}'s Python calls: the previous release, once the next one is out.
#
# Rolling upgrades run the previous release's processes beside the new ones on the new
# schema, so none of these may be dropped yet, even when this release no longer calls
# them; what they call in turn stays too (tests/support/sql_usage.py follows the bodies).
# A function live only through this list is marked `-- previous release` in its live file
# (tests/migration/test_orphan_sql.py checks the marks); the next release step drops it.
#
# Written by the release step (docs/development.md): .venv/bin/python -m tests.support.release
"""
    return header + "".join(f"{name}\n" for name in sorted(set(names)))


@dataclass(frozen=True)
class InstalledSql:
    """The functions of our schema as the database holds them."""

    #: name -> identity signature, e.g. ``similarity_v1(p_distance double precision)``
    functions: Mapping[str, str]
    #: caller -> callees, both functions of ours
    calls: Mapping[str, frozenset[str]]
    #: functions a non-function object uses (trigger, view, default, index, constraint)
    #: or a function outside our schema, with what uses them
    used_by_objects: Mapping[str, str]


_FUNCTIONS = """
SELECT p.oid::bigint AS oid, p.proname AS name,
       p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS signature,
       p.prosrc AS body
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = $1
"""

_DEPENDENTS = """
SELECT d.refobjid::bigint AS callee,
       CASE WHEN d.classid = 'pg_proc'::regclass THEN d.objid::bigint END AS caller_oid,
       pg_describe_object(d.classid, d.objid, d.objsubid) AS dependent
FROM pg_depend d JOIN pg_proc p ON d.refclassid = 'pg_proc'::regclass AND d.refobjid = p.oid
JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = $1 AND d.deptype IN ('n', 'a')
"""


async def installed_sql(conn: asyncpg.Connection, schema: str = SCHEMA) -> InstalledSql:
    """Read the functions of ``schema``, who calls whom, and what pins them."""
    rows = await conn.fetch(_FUNCTIONS, schema)
    by_oid = {row["oid"]: row["name"] for row in rows}
    names = set(by_oid.values())
    calls: dict[str, set[str]] = {row["name"]: set() for row in rows}
    for row in rows:
        mentioned = set(VERSIONED_NAME.findall(strip_comments(row["body"] or "")))
        calls[row["name"]] |= (mentioned & names) - {row["name"]}
    used_by_objects: dict[str, str] = {}
    for row in await conn.fetch(_DEPENDENTS, schema):
        callee = by_oid[row["callee"]]
        caller = by_oid.get(row["caller_oid"])
        if caller is not None:
            calls[caller].add(callee)
        else:
            used_by_objects.setdefault(callee, row["dependent"])
    return InstalledSql(
        functions={row["name"]: row["signature"] for row in rows},
        calls={name: frozenset(callees) for name, callees in calls.items()},
        used_by_objects=used_by_objects,
    )


def live_functions(installed: InstalledSql, roots: Iterable[str]) -> set[str]:
    """``roots`` (and what pins the database) plus everything they call, transitively."""
    live: set[str] = set()
    pending = [name for name in (*roots, *installed.used_by_objects) if name in installed.functions]
    while pending:
        name = pending.pop()
        if name not in live:
            live.add(name)
            pending.extend(installed.calls.get(name, ()))
    return live


async def orphan_functions(
    conn: asyncpg.Connection,
    *,
    called_by_python: Iterable[str] | None = None,
    previous_release: Iterable[str] | None = None,
) -> dict[str, str]:
    """Installed functions of our schema that nothing calls: name -> signature.

    ``called_by_python`` defaults to :func:`python_calls` of this checkout and
    ``previous_release`` to ``sql/PREVIOUS_RELEASE.txt``.
    """
    installed = await installed_sql(conn)
    roots = set(python_calls() if called_by_python is None else called_by_python)
    roots |= set(read_previous_release() if previous_release is None else previous_release)
    live = live_functions(installed, roots)
    return {
        name: signature
        for name, signature in sorted(installed.functions.items())
        if name not in live
    }


async def assert_no_orphans(conn: asyncpg.Connection, **roots: Iterable[str]) -> None:
    """Fail, naming each one, when an installed function of our schema is an orphan."""
    orphans = await orphan_functions(conn, **roots)
    assert not orphans, (
        f"{len(orphans)} installed SQL function(s) nothing calls (not the Python, a live "
        "function, a trigger or view, nor sql/PREVIOUS_RELEASE.txt): "
        + "; ".join(orphans.values())
        + ". Call them, or delete them from their live file with a migration that drops them "
        "(docs/development.md)."
    )


@dataclass(frozen=True)
class LiveDefinition:
    """One function or view of a live file: where its text stands, whether it is marked."""

    name: str
    #: function | view
    kind: str
    path: Path
    #: spans (start, end) of its CREATE and COMMENT statements, each from the comment
    #: lines right above it to the end of its line
    spans: tuple[tuple[int, int], ...]
    #: kept only for the previous release (a ``-- previous release`` line above it)
    marked: bool


def live_definitions(folder: Path = LIVE_DIR) -> dict[str, LiveDefinition]:
    """Every function and view the live files define, by name."""
    found: dict[str, LiveDefinition] = {}
    for path in sorted(folder.glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        spans: dict[str, list[tuple[int, int]]] = {}
        marked: dict[str, bool] = {}
        kinds: dict[str, str] = {}
        for statement in scan(text):
            defined = defined_name(statement.sql)
            if defined is None:
                continue
            verb, kinds[defined.name], name = defined
            begin = preamble_start(text, statement.start)
            line_end = text.find("\n", statement.end)
            spans.setdefault(name, []).append((begin, len(text) if line_end < 0 else line_end + 1))
            if verb == "create":
                assert name not in found and name not in marked, f"{name} is defined twice"
                marked[name] = bool(PREVIOUS_MARK.search(text[begin : statement.start]))
        for name, is_marked in marked.items():
            found[name] = LiveDefinition(name, kinds[name], path, tuple(spans[name]), is_marked)
    return found


def previous_release_only(installed: InstalledSql) -> set[str]:
    """The functions only the previous release keeps live: what the next release drops."""
    calls = python_calls(PACKAGE_SOURCES)
    return live_functions(installed, calls | read_previous_release()) - live_functions(
        installed, calls
    )


#: A call of one of our functions in SQL text: ``amrita_memory.name_vN(``.
SQL_CALL = re.compile(r"amrita_memory\.([a-z][a-z0-9_]*_v[0-9]+)\s*\(")


def python_sql_calls(sources: Iterable[Path] = PYTHON_SOURCES) -> set[str]:
    """The functions the Python calls in SQL it loads or writes (not a name in a label)."""
    strings = python_strings(sources)
    texts = [item.sql for name, item in catalogue().items() if name in strings] + list(strings)
    return {name for text in texts for name in SQL_CALL.findall(strip_comments(text))}
