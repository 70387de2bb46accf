"""One rule in two places: a memo's sentences and a text's id are the same in SQL
(memo_sentences_v1, text_id_v1) and Python (domain/lineage.py), so a sentence the loop's
write named is the sentence a forget finds."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amrita_memory_pg.domain.lineage import memo_sentences, text_id
from tests.support.pg import PgServer, SyncConnection

DET = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
memos = st.text(alphabet="ab。！？!?\n\r\t 猫花生", max_size=40)


@pytest.fixture(scope="module")
def sql(pg_server: PgServer, template_db: str) -> Iterator[SyncConnection]:
    name = asyncio.run(pg_server.create_database(template=template_db))
    connection = SyncConnection(pg_server.dsn(name))
    try:
        yield connection
    finally:
        connection.close()
        asyncio.run(pg_server.drop_database(name))


@DET
@given(text=memos)
def test_memo_sentences_split_the_same_in_sql_and_python(sql: SyncConnection, text: str) -> None:
    assert sql.fetchval("SELECT amrita_memory.memo_sentences_v1($1)", text) == memo_sentences(text)


@DET
@given(text=memos)
def test_text_ids_are_the_same_in_sql_and_python(sql: SyncConnection, text: str) -> None:
    assert sql.fetchval("SELECT amrita_memory.text_id_v1($1)", text) == text_id(text)
