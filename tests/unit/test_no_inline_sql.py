"""Runtime SQL lives in ``sql/`` only: no string in the package's Python looks like SQL.

Every statement is a named block of ``sql/queries/*.sql`` (loaded by
``storage/queries.py``), so that the PREPARE test sees all of them and a reviewer finds
them in one place. This scans string constants (f-strings by their literal parts) of
every module; docstrings are prose and skipped. ``migrations/`` is outside the package,
and ``bench/`` is a harness, so neither is scanned.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.sql_usage import docstring_ids

PACKAGE = Path(__file__).resolve().parents[2] / "amrita_memory_pg"

#: Modules not scanned, each with the reason its SQL cannot be a named query. Empty: even
#: the loader (storage/queries.py) holds SQL only in its docstring.
ALLOWED_MODULES: frozenset[str] = frozenset()

_OBJECT = r"(TABLE|INDEX|DATABASE|SCHEMA|EXTENSION|FUNCTION|PROCEDURE|VIEW|MATERIALIZED|TYPE|ROLE|SEQUENCE|TRIGGER)"
#: A statement's first words, case-insensitive after leading whitespace. Each verb needs
#: the word that makes it a statement (DELETE FROM, DROP INDEX, …), so that prose such as
#: "Drop the collection" or "update memory 3" in a message is not taken for SQL; SELECT
#: and WITH … AS ( are SQL whatever follows.
LOOKS_LIKE_SQL = re.compile(
    r"""^\s*(
        SELECT\b
      | WITH\s+(RECURSIVE\s+)?\w+(\s*\([^)]*\))?\s+AS\s*(NOT\s+)?(MATERIALIZED\s*)?\(
      | INSERT\s+INTO\b
      | UPDATE\s+[\w."]+(\s+(AS\s+)?\w+)?\s+SET\b
      | DELETE\s+FROM\b
      | (CREATE|DROP|ALTER)\s+(OR\s+REPLACE\s+|UNIQUE\s+|TEMP(ORARY)?\s+)*"""
    + _OBJECT
    + r"""\b
      | COPY\s+[\w."]+\s*(\(|FROM\b|TO\b)
      | SHOW\s+\w+\s*;?\s*$
      | SET\s+(LOCAL\s+|SESSION\s+)?[\w."]+\s*(=|TO\b)
    )""",
    re.IGNORECASE | re.VERBOSE,
)


def sql_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant in ``source`` that looks like SQL."""
    tree = ast.parse(source)
    skip = docstring_ids(tree)
    hits: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            # an f-string: its literal parts joined, placeholders as a bare word
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "x" for part in node.values
            )
            if LOOKS_LIKE_SQL.match(text):
                hits.append((node.lineno, text))
            for part in node.values:
                skip.add(id(part))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skip
            and LOOKS_LIKE_SQL.match(node.value)
        ):
            hits.append((node.lineno, node.value))
    return hits


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1",
        "  select * from amrita_memory.memory",
        "\n    SELECT id\n      FROM t",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "with recursive t(n) as (select 1) select n from t",
        "INSERT INTO amrita_memory.ann_index VALUES ($1)",
        "UPDATE amrita_memory.memory m SET content = $1",
        "update amrita_memory.store_meta set embed_dim = 3",
        "DELETE FROM amrita_memory.memo",
        "CREATE DATABASE x",
        "CREATE UNIQUE INDEX CONCURRENTLY ix ON t (c)",
        "create or replace function f() returns int",
        "DROP INDEX CONCURRENTLY IF EXISTS amrita_memory.ix",
        "DROP SCHEMA IF EXISTS amrita_memory CASCADE",
        "ALTER TABLE amrita_memory.memory ADD COLUMN x int",
        "COPY amrita_memory.memory (id) FROM stdin;",
        "SHOW server_version",
        "SET LOCAL statement_timeout = 0",
        "set search_path to amrita_memory",
    ],
)
def test_the_detector_recognises_sql(text: str) -> None:
    assert LOOKS_LIKE_SQL.match(text)


@pytest.mark.parametrize(
    "text",
    [
        "show",
        "delete",
        "create",
        "Show tracebacks and debug logs.",
        "Drop the chroma collection and refill it from PostgreSQL.",
        "update memory 0123abcd",
        "Delete one memory of the partition",
        " with a body that is not JSON: ",
        "Set the model first.",
        "copy",
        "-- name: get_memo",
    ],
)
def test_the_detector_leaves_prose_alone(text: str) -> None:
    assert not LOOKS_LIKE_SQL.match(text)


def test_f_strings_are_scanned_and_docstrings_are_not() -> None:
    source = (
        "def f(table):\n"
        '    """SELECT in a docstring is prose."""\n'
        '    return f"SELECT * FROM {table}"\n'
        'X = "DELETE FROM t"\n'
    )
    assert sorted(line for line, _ in sql_literals(source)) == [3, 4]


def test_no_python_module_of_the_package_holds_sql_text() -> None:
    found = {
        f"{path.relative_to(PACKAGE).as_posix()}:{line}": text.strip()[:60]
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() not in ALLOWED_MODULES
        for line, text in sql_literals(path.read_text(encoding="utf-8"))
    }
    assert found == {}, "move these statements into sql/queries/*.sql as named queries"
