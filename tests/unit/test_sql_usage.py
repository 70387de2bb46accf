"""The pieces of the orphan-SQL check that need no database: splitting a SQL file into
statements (and where each stands), and reading which functions the Python calls."""

from __future__ import annotations

from pathlib import Path

from amrita_memory_pg.storage.pg.sqlfile import (
    defined_name,
    defines_function,
    preamble_start,
    scan,
    split_statements,
    strip_comments,
)
from amrita_memory_pg.storage.queries import catalogue
from tests.support.sql_usage import (
    VERSIONED_NAME,
    live_definitions,
    python_calls,
    python_sql_calls,
    read_previous_release,
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


def test_a_statement_knows_its_span_and_what_it_defines() -> None:
    text = (
        "-- the file's header\n\n"
        "-- x's own comment\n"
        "CREATE OR REPLACE FUNCTION amrita_memory.x_v1() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$;\n"
        "COMMENT ON FUNCTION amrita_memory.x_v1() IS 'x';\n"
        "CREATE OR REPLACE VIEW amrita_memory.v AS SELECT 1;\n"
        "CREATE TRIGGER t AFTER INSERT ON amrita_memory.memory FOR EACH ROW EXECUTE FUNCTION f()"
    )
    statements = scan(text)
    assert [text[s.start : s.end] for s in statements][:2] == [
        "CREATE OR REPLACE FUNCTION amrita_memory.x_v1() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$;",
        "COMMENT ON FUNCTION amrita_memory.x_v1() IS 'x';",
    ]
    assert statements[-1].end == len(text)  # the last one without its ";"
    assert text[preamble_start(text, statements[0].start) :].startswith("-- x's own comment\n")
    assert [defined_name(s.sql) for s in statements] == [
        ("create", "function", "x_v1"),
        ("comment", "function", "x_v1"),
        ("create", "view", "v"),
        None,
    ]
    assert [defines_function(s.sql) for s in statements] == [True, True, False, False]


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


def test_python_sql_calls_are_calls_in_sql_not_names_in_labels(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        'LABEL = "insert_memory_v5 p50 (ms)"\nSQL = "SELECT * FROM amrita_memory.probe_v7($1)"\n',
        encoding="utf-8",
    )
    assert python_sql_calls([tmp_path]) == {"probe_v7"}
    assert {"probe_v7", "insert_memory_v5"} <= python_calls([tmp_path])


def test_the_previous_release_file_is_what_the_release_step_writes_for_its_names() -> None:
    names = read_previous_release()
    assert names <= set(live_definitions())
    rendered = render_previous_release(names, "0.14.0")
    assert rendered.startswith("# The SQL functions 0.14.0's Python calls")
    assert [line for line in rendered.splitlines() if not line.startswith("#")] == sorted(names)
    assert [line for line in rendered.splitlines() if not line.startswith("#")] == [
        line
        for line in (Path(__file__).parents[2] / "sql" / "PREVIOUS_RELEASE.txt")
        .read_text("utf-8")
        .splitlines()
        if not line.startswith("#")
    ]
