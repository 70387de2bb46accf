"""Where a DSN points, as ``status`` and the errors name it: every host of libpq's failover
list, never "localhost" for a URL that names hosts."""

from __future__ import annotations

import pytest

from amrita_memory_pg.storage.pg.database import describe_target


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        (
            "postgresql://amrita:pw@db1:5432,db2:5433/amrita_memory?target_session_attrs=read-write",
            "db1:5432,db2:5433/amrita_memory",
        ),
        (
            "postgresql://amrita@/amrita_memory?host=db1,db2&port=5432,5432"
            "&target_session_attrs=read-write",
            "db1:5432,db2:5432/amrita_memory",
        ),
        ("postgresql://amrita@/m?host=/run/a,/run/b&port=5433", "/run/a:5433,/run/b:5433/m"),
        ("postgresql://postgres@/t_x?host=/tmp/pg", "/tmp/pg/t_x"),
        ("postgresql://amrita:secret@127.0.0.1:6432/amrita_memory", "127.0.0.1:6432/amrita_memory"),
        ("postgresql://u@[::1]:5432/db", "[::1]:5432/db"),
        ("postgresql:///amrita_memory", "localhost/amrita_memory"),
    ],
)
def test_a_dsn_is_shown_with_every_host_it_names_and_no_password(dsn: str, shown: str) -> None:
    assert describe_target(dsn) == shown
    assert "secret" not in describe_target(dsn) and "pw" not in describe_target(dsn)
