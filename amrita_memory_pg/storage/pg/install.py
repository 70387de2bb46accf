"""A fresh install: the present schema, built from the live definitions in one transaction.

procrastinate's model: an empty database gets what ``sql/`` and the table declarations
say now (``sql/functions/*.sql``, ``storage/pg/schema.py``, ``sql/tables.sql``); an
installed one gets the migrations from its revision on. ``tests/migration/
test_present_schema.py`` proves the two give the same schema, function bodies included,
so a live file edited without a migration fails there. Run by ``migrations/env.py`` when
an empty database is upgraded to head, which then stamps head.

Order: the vector extension; every function (with its comment), body checks off, since a
table's DEFAULT calls one and functions name tables; the tables; ``sql/tables.sql``; the
other statements of the live files in file order (triggers, views and their comments);
body checks on, and every function's body checked by its language's validator.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import create_mock_engine, make_url
from sqlalchemy.engine import Connection
from sqlalchemy.sql.ddl import ExecutableDDLElement
from sqlalchemy.util import await_only

from amrita_memory_pg.resources import sql_dir
from amrita_memory_pg.storage.pg.migrate import driver, execute_script
from amrita_memory_pg.storage.pg.schema import metadata
from amrita_memory_pg.storage.pg.sqlfile import defines_function, split_statements
from amrita_memory_pg.storage.queries import query


def live_files() -> list[Path]:
    """The live definition files: one per family, in name order."""
    return sorted((sql_dir() / "functions").glob("*.sql"))


def live_statements() -> Iterator[str]:
    """Every statement of the live files, file by file."""
    for path in live_files():
        yield from split_statements(path.read_text(encoding="utf-8"))


def table_ddl() -> list[str]:
    """The DDL that creates the declared tables (``storage/pg/schema.py``): their
    columns, constraints, indexes and comments, as ``metadata.create_all`` would send it
    one statement at a time; sent here as one script (a round trip, not ~200)."""
    statements: list[str] = []

    def collect(ddl: ExecutableDDLElement, *_args: object, **_kwargs: object) -> None:
        statements.append(str(ddl.compile(dialect=engine.dialect)).strip())

    engine = create_mock_engine(make_url("postgresql+asyncpg://"), collect)
    metadata.create_all(engine, checkfirst=False)
    return statements


def install_present(connection: Connection) -> None:
    """Create the present schema on ``connection`` (its schema exists and is empty)."""
    statements = list(live_statements())
    functions = [s for s in statements if defines_function(s)]
    others = [s for s in statements if not defines_function(s)]
    execute_script(connection, query("create_vector_extension"))
    execute_script(connection, query("function_body_checks_off"))
    execute_script(connection, ";\n".join(functions))
    execute_script(connection, ";\n".join(table_ddl()))
    execute_script(connection, (sql_dir() / "tables.sql").read_text(encoding="utf-8"))
    execute_script(connection, ";\n".join(others))
    execute_script(connection, query("function_body_checks_on"))
    validations = await_only(driver(connection).fetch(query("function_validations")))
    execute_script(connection, ";\n".join(row["statement"] for row in validations))
