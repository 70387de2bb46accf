"""The named-query loader: blocks parse as written, and every mistake fails loudly."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from amrita_memory_pg.storage import queries
from amrita_memory_pg.storage.queries import UnknownQuery, load_queries, query

PACKAGE = Path(__file__).resolve().parents[2] / "amrita_memory_pg"


def _write(directory: Path, name: str, text: str) -> None:
    (directory / name).write_text(text, encoding="utf-8")


def test_a_block_is_its_statement_without_header_comment_or_final_semicolon(
    tmp_path: Path,
) -> None:
    _write(
        tmp_path,
        "area.sql",
        "-- File header: what this area is.\n\n"
        "-- name: first\n-- Why the first exists.\n-- Second line.\nSELECT 1\n  -- inline note\n  , 2;\n\n"
        "-- name: second\n-- Why.\nSELECT $1::text;\n",
    )
    loaded = load_queries(tmp_path)
    assert list(loaded) == ["first", "second"]
    assert loaded["first"].sql == "SELECT 1\n  -- inline note\n  , 2"
    assert loaded["first"].doc == "Why the first exists.\nSecond line."
    assert loaded["first"].origin == "area.sql:3"
    assert loaded["second"].sql == "SELECT $1::text"


def test_a_name_defined_in_two_files_is_refused_with_both_places(tmp_path: Path) -> None:
    _write(tmp_path, "a.sql", "-- name: same\n-- One.\nSELECT 1;\n")
    _write(
        tmp_path,
        "b.sql",
        "-- name: other\n-- Two.\nSELECT 2;\n-- name: same\n-- Three.\nSELECT 3;\n",
    )
    with pytest.raises(ValueError, match=r"'same' is defined twice: a\.sql:1 and b\.sql:4"):
        load_queries(tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-- name: bare\nSELECT 1;\n", "needs a '-- ' comment"),
        ("-- name: empty\n-- Only a comment.\n", "has no statement"),
        ("SELECT 1;\n-- name: late\n-- Why.\nSELECT 2;\n", "SQL before the first"),
        ("-- name: Bad-Name\n-- Why.\nSELECT 1;\n", "not lower_snake_case"),
    ],
)
def test_malformed_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    _write(tmp_path, "bad.sql", text)
    with pytest.raises(ValueError, match=message):
        load_queries(tmp_path)


def test_an_unknown_name_raises_and_suggests_the_near_ones() -> None:
    with pytest.raises(UnknownQuery, match=r"no query named 'get_memoo'.*did you mean get_memo"):
        query("get_memoo")


def test_every_shipped_block_has_a_comment_and_the_loader_reads_them_once() -> None:
    first = queries.catalogue()
    assert first is queries.catalogue()
    assert {"get_memo", "append_memo", "record_user_message", "get_heatmap"} <= set(first)
    assert all(item.doc and item.sql for item in first.values())


def _names_used_in_code() -> set[tuple[str, str]]:
    """Every ``query("literal")`` call in the package, as (module, name)."""
    used: set[tuple[str, str]] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "query"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                used.add((path.relative_to(PACKAGE).as_posix(), node.args[0].value))
    return used


def test_every_name_the_code_asks_for_exists() -> None:
    used = _names_used_in_code()
    assert {name for _, name in used} >= {"get_memo", "record_user_message"}
    missing = sorted((module, name) for module, name in used if name not in queries.catalogue())
    assert missing == []


def test_every_shipped_query_has_exactly_one_call_site_in_the_package() -> None:
    """One typed wrapper per named query: a query nobody calls is dead SQL that the PREPARE
    test keeps alive for nothing, and two call sites are two wrappers that can drift. Names
    are literals (``query("name")``), so this test and the one above can see them."""
    calls: dict[str, list[str]] = {}
    dynamic: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "query"
                and node.args
            ):
                continue
            name = node.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                calls.setdefault(name.value, []).append(f"{module}:{node.lineno}")
            else:
                dynamic.append(f"{module}:{node.lineno}")
    assert dynamic == []
    unused = sorted(set(queries.catalogue()) - set(calls))
    assert unused == []
    repeated = {name: sites for name, sites in calls.items() if len(sites) > 1}
    assert repeated == {}
