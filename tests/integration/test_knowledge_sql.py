"""The knowledge functions of sql/functions/knowledge.sql, called directly as from psql."""

from __future__ import annotations

from datetime import timedelta

import asyncpg
import pytest

from amrita_memory_pg.storage.queries import catalogue

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
SECOND = timedelta(seconds=1)
V1 = "[1,0,0]"
V2 = "[0,1,0]"


async def _model(conn: asyncpg.Connection) -> None:
    await conn.execute(
        "UPDATE amrita_memory.store_meta SET embed_fingerprint = 'f', embed_dim = 3 WHERE id = 1"
    )


async def test_every_knowledge_query_prepares(conn: asyncpg.Connection) -> None:
    names = [n for n in catalogue() if "knowledge" in n or "permission" in n]
    assert len(names) >= 17
    for name in names:
        await conn.prepare(catalogue()[name].sql)


async def test_lines_create_update_read_search_delete(conn: asyncpg.Connection) -> None:
    await _model(conn)
    lines = "SELECT amrita_memory.knowledge_lines_v1($1)"
    assert await conn.fetchval(lines, "") == []
    assert await conn.fetchval(lines, "a\n\nb") == ["a", "", "b"]
    for body in ("", "a", "a\n", "\n\n", "a\nb", "一\n二\n三"):  # one numbering, two ways
        assert await conn.fetchval(
            "SELECT amrita_memory.knowledge_line_count_v1($1)"
            " = cardinality(amrita_memory.knowledge_lines_v1($1))",
            body,
        ), body

    create = (
        "SELECT * FROM amrita_memory.knowledge_create_v2($1, $2, $3, $4, $5::text::vector,"
        " 'f', $6, now(), NULL)"
    )
    row = await conn.fetchrow(create, "0000000a", "标题", "摘要", "一\n二\n三", V1, 100)
    assert tuple(row.values()) == ("created", "0000000a", 3, 5)
    row = await conn.fetchrow(create, "0000000a", "t", "s", "", V1, 100)
    assert row["status"] == "exists"
    row = await conn.fetchrow(create, "0000000b", "t", "s", "x" * 101, V1, 100)
    assert tuple(row.values()) == ("too_long", "0000000b", 0, 101)
    await conn.fetchrow(create, "0000000c", "咖啡", "烘焙", "", V2, 100)

    update = (
        "SELECT * FROM amrita_memory.knowledge_update_v1($1, $2, $3, $4, $5, $6,"
        " $7::text::vector, $8, 100, now())"
    )
    # replace line 1 with two lines
    row = await conn.fetchrow(update, "0000000a", None, None, "二a\n二b", 1, 2, None, None)
    assert tuple(row.values()) == ("updated", "0000000a", 4, 9)
    # end NULL = to the end; '' deletes
    row = await conn.fetchrow(update, "0000000a", None, None, "", 3, None, None, None)
    assert row["total_lines"] == 3
    for args, status in [
        (("0000000a", None, None, "x", 2, 9, None, None), "range"),
        (("0000000a", None, None, "x", -1, 0, None, None), "range"),
        (("0000000a", None, None, "x" * 101, None, None, None, None), "too_long"),
        (("0000000a", None, "新摘要", None, None, None, None, None), "needs_embedding"),
        (("ffffffff", "t", None, None, None, None, None, None), "not_found"),
    ]:
        assert (await conn.fetchrow(update, *args))["status"] == status, args
    # a vector of another model is refused by the store's model check
    with pytest.raises(asyncpg.PostgresError) as refused:
        await conn.fetchrow(update, "0000000a", None, "s", None, None, None, V2, "other")
    assert refused.value.sqlstate == "AMF01"

    read = "SELECT * FROM amrita_memory.knowledge_read_v1($1, $2, $3)"
    row = await conn.fetchrow(read, "0000000a", 1, 2)
    assert (row["body_lines"], row["total_lines"], row["range_start"], row["range_end"]) == (
        ["二a"],
        3,
        1,
        2,
    )
    row = await conn.fetchrow(read, "0000000a", 5, None)  # clamped like the reference
    assert (row["body_lines"], row["range_start"], row["range_end"]) == ([], 5, 5)
    assert await conn.fetchrow(read, "ffffffff", None, None) is None

    listed = await conn.fetch("SELECT kid, total_lines FROM amrita_memory.knowledge_list_v1()")
    assert [tuple(r.values()) for r in listed] == [("0000000a", 3), ("0000000c", 0)]
    search = "SELECT kid, distance FROM amrita_memory.knowledge_search_v2($1::text::vector, NULL, 'vector', 5)"
    hits = await conn.fetch(search, V2)
    assert [r["kid"] for r in hits] == ["0000000c", "0000000a"]
    assert hits[0]["distance"] == 0
    # another dimension is skipped, not an error
    assert await conn.fetch(search, "[1,0]") == []
    assert await conn.fetchval("SELECT amrita_memory.knowledge_delete_v1('0000000c')") is True
    assert await conn.fetchval("SELECT amrita_memory.knowledge_delete_v1('0000000c')") is False


async def test_suggestion_functions_bound_claim_complete_release(conn: asyncpg.Connection) -> None:
    suggest = (
        "SELECT * FROM amrita_memory.knowledge_suggest_v1($1, $2, 't', 's', 'b', 'r', $3,"
        " 2, $4, 3600, now())"
    )
    assert (await conn.fetchrow(suggest, "create", None, "u1", 0))["status"] == "queued"
    assert (await conn.fetchrow(suggest, "update", "ffffffff", "u1", 0))["status"] == "unknown_kid"
    assert (await conn.fetchrow(suggest, "create", None, "u1", 1))["status"] == "rate_limited"
    assert (await conn.fetchrow(suggest, "create", None, "u2", 0))["status"] == "queued"
    assert (await conn.fetchrow(suggest, "create", None, "u3", 0))["status"] == "full"
    claim = "SELECT id FROM amrita_memory.knowledge_claim_suggestions_v1($1, now(), now() - $2::interval)"
    assert len(await conn.fetch(claim, 5, HOUR)) == 2
    assert await conn.fetch(claim, 6, HOUR) == []
    # a claim older than the stale bound belongs to a dead cycle: taken over
    assert len(await conn.fetch(claim, 6, -SECOND)) == 2
    assert await conn.fetchval("SELECT amrita_memory.knowledge_release_suggestions_v1(5)") == 0
    assert await conn.fetchval("SELECT amrita_memory.knowledge_release_suggestions_v1(6)") == 2
    assert len(await conn.fetch(claim, 7, HOUR)) == 2
    done = "SELECT amrita_memory.knowledge_complete_suggestions_v1($1, now(), now() - $2::interval)"
    assert await conn.fetchval(done, 7, DAY) == 2
    assert await conn.fetchval("SELECT count(*) FROM amrita_memory.knowledge_suggestion") == 2
    # done rows are pruned once older than the bound given
    assert await conn.fetchval(done, 7, -SECOND) == 0
    assert await conn.fetchval("SELECT count(*) FROM amrita_memory.knowledge_suggestion") == 0
