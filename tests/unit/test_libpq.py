"""Passwords leave libpq command lines (F5): what is cut out, and what stays untouched."""

from __future__ import annotations

import pytest

from amrita_memory_pg.storage.pg.libpq import child_process_args, without_password


@pytest.mark.parametrize(
    ("dsn", "clean", "password"),
    [
        (
            "postgresql://amrita:p%40ss%3Aw%2Frd@127.0.0.1:5432/amrita_memory",
            "postgresql://amrita@127.0.0.1:5432/amrita_memory",
            "p@ss:w/rd",
        ),
        (
            "postgres://u@h1:5432,h2:5433/db?sslmode=require&password=s%26cret",
            "postgres://u@h1:5432,h2:5433/db?sslmode=require",
            "s&cret",
        ),
        (
            "host=/tmp dbname=x password='a b\\'c' user=u",
            "host=/tmp dbname=x user=u",
            "a b'c",
        ),
        ("host=db.example password=plain", "host=db.example", "plain"),
        (
            "postgresql://postgres@/amrita_memory?host=/tmp/x/pg",
            "postgresql://postgres@/amrita_memory?host=/tmp/x/pg",
            None,
        ),
        ("SELECT 'password=x'", "SELECT 'password=x'", None),  # SQL text is not a DSN
        ("--file=/tmp/password=x", "--file=/tmp/password=x", None),
    ],
)
def test_without_password(dsn: str, clean: str, password: str | None) -> None:
    assert without_password(dsn) == (clean, password)


def test_child_args_carry_the_password_in_the_environment_only() -> None:
    argv, env = child_process_args(
        ["pg_dump", "--format=custom", "postgresql://bob:hunter2@db/x"], {"PATH": "/bin"}
    )
    assert argv == ["pg_dump", "--format=custom", "postgresql://bob@db/x"]
    assert env == {"PATH": "/bin", "PGPASSWORD": "hunter2"}
    argv, env = child_process_args(["psql", "postgresql://bob@db/x"], {"PGPASSWORD": "outer"})
    assert env == {"PGPASSWORD": "outer"}  # nothing to pass: the caller's environment as is
    with pytest.raises(ValueError, match="two different"):
        child_process_args(["x", "postgresql://a:1@h/d", "postgresql://a:2@h/d"], {})
