"""sql/ is the present, migrations/ the past: the layout that keeps them apart.

``sql/functions`` holds one file per family with the functions and views a fresh install
creates, each defined in exactly one place; what a migration installed is frozen with it
(its own SQL beside it under ``migrations/versions``), so no migration reads a live file:
an edit of a live file changes a fresh install only, and
``tests/migration/test_present_schema.py`` fails until a migration brings the chain along.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from amrita_memory_pg.resources import migrations_dir, sql_dir
from tests.support.sql_usage import (
    PREVIOUS_MARK,
    VERSIONED_NAME,
    docstring_ids,
    live_definitions,
    read_previous_release,
)

LIVE = sql_dir() / "functions"
VERSIONS = migrations_dir() / "versions"
#: what a migration's code may not name: the loaders of sql/'s files, or a path into it
LIVE_READERS = {"sql_dir", "live_files", "live_statements", "install_present"}


def test_the_live_folder_holds_one_unversioned_file_per_family() -> None:
    names = sorted(p.name for p in LIVE.iterdir())
    assert names, "sql/functions is empty"
    misplaced = [
        n for n in names if not re.fullmatch(r"[a-z][a-z0-9_]*\.sql", n) or re.search(r"_v\d+\.", n)
    ]
    assert misplaced == [], f"a live file is <family>.sql (no version, no .down): {misplaced}"
    assert not (sql_dir() / "views").exists(), "views live in their family's file"


def test_every_function_and_view_is_defined_once_with_a_versioned_name() -> None:
    definitions = live_definitions()  # a second CREATE of one name fails in here
    assert {"search_memories_v8", "sweep_batch_v8", "partition_usage"} <= set(definitions)
    unversioned = sorted(
        name
        for name, d in definitions.items()
        if d.kind == "function" and not VERSIONED_NAME.fullmatch(name)
    )
    assert unversioned == [], (
        f"a function's name ends in _vN (a change is a new one): {unversioned}"
    )


def test_a_second_definition_of_one_name_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text(
        "CREATE FUNCTION amrita_memory.x_v1() RETURNS int LANGUAGE sql AS 'SELECT 1';\n"
    )
    (tmp_path / "b.sql").write_text(
        "CREATE OR REPLACE FUNCTION amrita_memory.x_v1() RETURNS int LANGUAGE sql AS 'SELECT 2';\n"
    )
    with pytest.raises(AssertionError, match="x_v1 is defined twice"):
        live_definitions(tmp_path)


def test_the_previous_release_mark_is_read_from_the_lines_right_above(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text(
        "-- previous release: kept for a rolling upgrade\n"
        "-- what it does\n"
        "CREATE FUNCTION amrita_memory.old_v1() RETURNS int LANGUAGE sql AS 'SELECT 1';\n"
        "COMMENT ON FUNCTION amrita_memory.old_v1() IS 'old';\n"
        "\n"
        "-- previous release (a mark for the function above? no: a blank line between)\n"
        "\n"
        "-- what it does\n"
        "CREATE FUNCTION amrita_memory.new_v2() RETURNS int LANGUAGE sql AS 'SELECT 2';\n"
    )
    found = live_definitions(tmp_path)
    assert found["old_v1"].marked and not found["new_v2"].marked
    assert len(found["old_v1"].spans) == 2  # its CREATE and its COMMENT
    assert PREVIOUS_MARK.search("-- Previous release: 0.14 calls it")


def reads_a_live_file(source: str) -> bool:
    """Whether code (docstrings aside) names a loader of sql/ or a path into it."""
    tree = ast.parse(source)
    prose = docstring_ids(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.alias | ast.Attribute):
            name = (
                node.id
                if isinstance(node, ast.Name)
                else (node.name if isinstance(node, ast.alias) else node.attr)
            )
            if name.rsplit(".", 1)[-1] in LIVE_READERS:
                return True
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in prose
            and re.search(r"\bfunctions/|tables\.sql", node.value)
        ):
            return True
    return False


def test_the_live_file_check_sees_a_loader_or_a_path_but_not_prose() -> None:
    assert reads_a_live_file("from amrita_memory_pg.resources import sql_dir")
    assert reads_a_live_file("x = resources.sql_dir() / 'f'")
    assert reads_a_live_file("run_sql_file(Path('sql/functions/memory.sql'))")
    assert not reads_a_live_file('"""Brings the schema to sql/functions\' definitions."""')


def test_no_migration_reads_a_live_file() -> None:
    readers = sorted(
        p.name for p in VERSIONS.glob("*.py") if reads_a_live_file(p.read_text("utf-8"))
    )
    assert readers == [], (
        f"migrations that read sql/'s live files: {readers}. A migration keeps what it "
        "installs beside it (<revision>.sql) or inline, frozen: a live file changes later"
    )


def test_every_sql_file_beside_the_migrations_belongs_to_one() -> None:
    modules = {p.stem for p in VERSIONS.glob("*.py")}
    stray = sorted(p.name for p in VERSIONS.glob("*.sql") if p.name.split(".")[0] not in modules)
    assert stray == [], f"SQL files of no migration: {stray}"
    for path in VERSIONS.glob("*.py"):
        ast.parse(path.read_text("utf-8"))  # every module parses (alembic imports them all)


def test_the_previous_release_list_names_only_live_functions() -> None:
    assert read_previous_release() <= set(live_definitions())
