"""The pieces of the orphan-SQL check that need no database: splitting a released file
into statements, and reading which functions the Python calls."""

from __future__ import annotations

from pathlib import Path

from amrita_memory_pg.resources import read_sql
from amrita_memory_pg.storage.pg.sqlfile import (
    function_statements,
    split_statements,
    strip_comments,
)
from amrita_memory_pg.storage.queries import catalogue
from tests.support.sql_usage import (
    VERSIONED_NAME,
    python_calls,
    read_previous_release,
    released_functions,
    render_previous_release,
)


def test_a_semicolon_in_a_body_string_or_comment_does_not_end_a_statement() -> None:
    text = """
    -- a header; with a semicolon
    CREATE FUNCTION amrita_memory.a_v1() RETURNS text LANGUAGE plpgsql AS $fn$
    BEGIN RETURN 'x;y' || $$;$$; END $fn$;
    /* block; /* nested; */ still comment */
    COMMENT ON FUNCTION amrita_memory.a_v1() IS 'it''s; fine';
    SELECT E'\\';', "odd;name", $1
    """
    statements = split_statements(text)
    assert len(statements) == 3
    assert statements[0].startswith("CREATE FUNCTION") and statements[0].endswith("END $fn$")
    assert statements[1] == "COMMENT ON FUNCTION amrita_memory.a_v1() IS 'it''s; fine'"
    assert statements[2].startswith("SELECT E'\\';'")


def test_function_statements_pick_create_comment_and_drop_of_the_names_asked() -> None:
    text = read_sql("functions/memory_v3.sql") + read_sql("functions/memory_v3.down.sql")
    picked = function_statements(text, {"search_memories_v3"})
    heads = [s.split("(", 1)[0].split()[0] for s in picked]
    assert heads == ["CREATE", "COMMENT", "DROP"]
    assert all("amrita_memory.search_memories_v3(" in s for s in picked)


def test_strip_comments_keeps_quoted_text() -> None:
    assert VERSIONED_NAME.findall(strip_comments("-- was old_v1()\nSELECT new_v2('--x')")) == [
        "new_v2"
    ]


def test_python_calls_come_from_loaded_queries_and_strings_never_docstrings(
    tmp_path: Path,
) -> None:
    (tmp_path / "mod.py").write_text(
        '"""Used to call search_memories_v1."""\n'
        "def f(query):\n"
        '    """Like insert_memory_v1."""\n'
        "    # update_memory_v1 in a comment\n"
        '    return query("search_memories"), "SELECT amrita_memory.probe_v7($1)"\n',
        encoding="utf-8",
    )
    calls = python_calls([tmp_path])
    loaded = set(VERSIONED_NAME.findall(catalogue()["search_memories"].sql))
    assert calls == loaded | {"probe_v7"}
    assert not calls & {"search_memories_v1", "insert_memory_v1", "update_memory_v1"}


def test_the_previous_release_file_is_what_the_generator_writes_for_its_names() -> None:
    names = read_previous_release()
    assert names <= released_functions()
    rendered = render_previous_release(names, "abc1234")
    assert rendered.startswith("# The SQL functions the previous release's Python calls")
    lines = rendered.splitlines()
    assert lines[0].endswith("(released at commit abc1234).")
    assert [line for line in lines if not line.startswith("#")] == sorted(names)
