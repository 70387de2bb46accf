"""The lineage functions of sql/functions/lineage.sql, called directly as from psql: the
walks both ways, the forget cascade's rule, the erasure's receipt and the ledger."""

from __future__ import annotations

import json
from typing import Any

import asyncpg

P = "QQPlatform_Private_10001"
Q = "QQPlatform_Private_10002"
G = "QQPlatform_Group_777"
VEC = "[1,0,0]"


async def _model(conn: asyncpg.Connection) -> None:
    await conn.execute(
        "UPDATE amrita_memory.store_meta SET embed_fingerprint = 'f', embed_dim = 3 WHERE id = 1"
    )


async def _memory(conn: asyncpg.Connection, key: str, content: str, **kw: Any) -> str:
    memory_id: str = await conn.fetchval(
        "INSERT INTO amrita_memory.memory (partition_key, scope, content, importance, embedding,"
        " embed_fingerprint, author, source) VALUES ($1, $2, $3, 5, $4::text::vector, 'f', $5, $6)"
        " RETURNING id",
        key,
        "group" if "Group" in key else "user",
        content,
        VEC,
        kw.get("author"),
        kw.get("source", "auto"),
    )
    return memory_id


async def _line(conn: asyncpg.Connection, session: str, user: str, text: str) -> str:
    line_id: int = await conn.fetchval(
        "INSERT INTO amrita_memory.chat_log (session_key, user_id, role, text) VALUES ($1, $2, 'user', $3)"
        " RETURNING id",
        session,
        user,
        text,
    )
    return str(line_id)


async def _edge(
    conn: asyncpg.Connection,
    derived: tuple[str, str, str],
    source: tuple[str, str, str],
    cycle: int | None = None,
) -> None:
    await conn.execute(
        "INSERT INTO amrita_memory.lineage VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())",
        derived[0],
        derived[1],
        derived[2],
        source[0],
        source[1],
        source[2],
        "l3" if cycle else "extraction",
        cycle,
    )


async def _forget(
    conn: asyncpg.Connection, ids: list[str], *, key: str = P, dry: bool = False
) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT * FROM amrita_memory.forget_memories_v1($1, $2, '{}', '{}', 'test', now(), $3)",
        key,
        ids,
        dry,
    )


async def _dump_text(conn: asyncpg.Connection) -> str:
    """Every row of every table of the schema as text."""
    tables = [
        r["tablename"]
        for r in await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'amrita_memory'"
        )
    ]
    parts = []
    for table in tables:
        rows = await conn.fetch(f"SELECT t::text AS row FROM amrita_memory.{table} t")
        parts.extend(r["row"] for r in rows)
    return "\n".join(parts)


async def test_text_ids_and_memo_sentences(conn: asyncpg.Connection) -> None:
    split = "SELECT amrita_memory.memo_sentences_v1($1)"
    assert await conn.fetchval(split, "喜欢猫。对花生过敏！\n周六爬山") == [
        "喜欢猫。",
        "对花生过敏！\n",
        "周六爬山",
    ]
    assert await conn.fetchval(split, "") == []
    assert await conn.fetchval(split, "a\n\nb?") == ["a\n\n", "b?"]
    assert await conn.fetchval("SELECT amrita_memory.text_id_v1(' x \n')") == await conn.fetchval(
        "SELECT md5('x')"
    )


async def test_made_from_and_used_by_walk_both_ways(conn: asyncpg.Connection) -> None:
    await _model(conn)
    line = await _line(conn, P, "10001", "我对花生过敏")
    fact = await _memory(conn, P, "用户对花生过敏")
    merged = await _memory(conn, P, "用户对花生和芒果过敏")
    await _edge(conn, ("memory", P, fact), ("chat_line", P, line))
    await _edge(conn, ("memory", P, merged), ("memory", P, fact), cycle=1)
    await _edge(conn, ("memory", P, merged), ("memory", P, merged), cycle=1)  # self-edge
    await _edge(conn, ("knowledge", "", "0000000a"), ("memory", P, merged), cycle=2)

    up = await conn.fetch(
        "SELECT * FROM amrita_memory.lineage_made_from_v1('knowledge', '', '0000000a')"
    )
    assert [(r["depth"], r["kind"], r["row_id"], r["present"]) for r in up] == [
        (1, "memory", merged, True),
        (2, "memory", fact, True),
        (3, "chat_line", line, True),
    ]
    assert up[2]["body"] == "我对花生过敏"
    down = await conn.fetch(
        "SELECT * FROM amrita_memory.lineage_used_by_v1('chat_line', $1, $2)", P, line
    )
    assert [(r["depth"], r["kind"], r["row_id"], r["present"]) for r in down] == [
        (1, "memory", fact, True),
        (2, "memory", merged, True),
        (3, "knowledge", "0000000a", False),  # no such entry (any more)
    ]


async def test_a_forget_deletes_what_came_from_it_alone_and_withholds_what_came_from_several(
    conn: asyncpg.Connection,
) -> None:
    await _model(conn)
    line = await _line(conn, P, "10001", "我对花生过敏，别给我推荐花生酱")
    other_line = await _line(conn, P, "10001", "周六去爬山")
    fact = await _memory(conn, P, "用户对花生过敏")
    hike = await _memory(conn, P, "用户周六爬山")
    unrelated = await _memory(conn, P, "用户喜欢猫")
    await _edge(conn, ("memory", P, fact), ("chat_line", P, line))
    await _edge(conn, ("memory", P, hike), ("chat_line", P, other_line))
    lines = ["对花生过敏", "周末爱爬山，但对花生过敏"]
    await conn.execute(
        "INSERT INTO amrita_memory.profile (partition_key, summary, lines) VALUES ($1, $2, $3)",
        P,
        "对花生过敏",
        lines,
    )
    await conn.execute(
        "INSERT INTO amrita_memory.memo (partition_key, content) VALUES ($1, $2)",
        P,
        "用户喜欢猫。用户对花生过敏！\n",
    )
    ids = {
        t: await conn.fetchval("SELECT amrita_memory.text_id_v1($1)", t)
        for t in [*lines, "用户对花生过敏！\n", "对花生过敏"]
    }
    await _edge(conn, ("profile_line", P, ids[lines[0]]), ("memory", P, fact), cycle=3)
    await _edge(conn, ("profile_summary", P, ids["对花生过敏"]), ("memory", P, fact), cycle=3)
    await _edge(conn, ("profile_line", P, ids[lines[1]]), ("memory", P, fact), cycle=3)
    await _edge(conn, ("profile_line", P, ids[lines[1]]), ("memory", P, hike), cycle=3)
    await _edge(conn, ("memo_sentence", P, ids["用户对花生过敏！\n"]), ("memory", P, fact), cycle=3)
    await conn.execute(
        "INSERT INTO amrita_memory.consolidation_cycle (target_key, id, trigger, started_at, summary)"
        " OVERRIDING SYSTEM VALUE VALUES ($1, 3, 'test', now(), '整理了花生过敏')",
        P,
    )

    plan = await _forget(conn, [fact], dry=True)
    actions = {(r["action"], r["kind"], r["row_id"]) for r in plan}
    assert ("forget", "memory", fact) in actions
    assert ("chat_line", "chat_line", line) in actions
    assert ("delete", "profile_line", ids[lines[0]]) in actions
    assert ("withhold", "profile_line", ids[lines[1]]) in actions
    assert ("delete", "memo_sentence", ids["用户对花生过敏！\n"]) in actions
    assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 3  # a dry run

    done = await _forget(conn, [fact])
    counts = {r["kind"]: r["n"] for r in done if r["action"] == "rows"}
    assert counts["memory"] == 1 and counts["chat_log"] == 1 and counts["rederive_task"] == 1
    profile = await conn.fetchrow("SELECT summary, lines FROM amrita_memory.profile")
    assert profile["summary"] == "" and profile["lines"] == []
    assert await conn.fetchval("SELECT content FROM amrita_memory.memo") == "用户喜欢猫。"
    task = await conn.fetchrow("SELECT * FROM amrita_memory.rederive_task")
    assert task["kind"] == "profile_line" and task["partition_key"] == P
    assert json.loads(task["held"]) == {"text": lines[1]}
    assert json.loads(task["sources"]) == [{"kind": "memory", "key": P, "id": hike}]
    assert json.loads(task["about"]) == [{"was": "用户对花生过敏", "now": None}]
    assert await conn.fetchval("SELECT summary FROM amrita_memory.consolidation_cycle") is None
    ledger = await conn.fetchrow("SELECT * FROM amrita_memory.erasure_ledger")
    assert ledger["kind"] == "forget" and ledger["memory_ids"] == [fact]
    assert ledger["chat_line_ids"] == [int(line)]
    assert "花生" not in json.dumps(json.loads(ledger["counts"]), ensure_ascii=False)
    # unrelated rows stay
    assert (
        await conn.fetchval(
            "SELECT count(*) FROM amrita_memory.memory WHERE id = ANY($1)", [hike, unrelated]
        )
        == 2
    )
    assert await conn.fetchval("SELECT text FROM amrita_memory.chat_log") == "周六去爬山"
    # the withheld line and what to leave out live only in its task until the loop
    # derives the line again
    task_text = await conn.fetchval("SELECT t::text FROM amrita_memory.rederive_task t")
    assert "周末爱爬山，但对花生过敏" in task_text
    assert (await _dump_text(conn)).count("花生") == task_text.count("花生")
    await conn.execute("DELETE FROM amrita_memory.rederive_task")
    assert "花生" not in await _dump_text(conn)


async def test_a_merge_keeps_its_own_content_so_forgetting_a_merged_memory_withholds_it(
    conn: asyncpg.Connection,
) -> None:
    await _model(conn)
    gone = "0123456789abcdef0123456789abcdef"  # merged into keep, deleted then
    keep = await _memory(conn, P, "用户喜欢猫，对花生过敏")
    await _edge(conn, ("memory", P, keep), ("memory", P, gone), cycle=1)
    await _edge(conn, ("memory", P, keep), ("memory", P, keep), cycle=1)
    done = await _forget(conn, [gone])
    assert {(r["action"], r["row_id"]) for r in done if r["action"] != "rows"} == {
        ("forget", gone),  # already gone: named, and recorded in the ledger
        ("withhold", keep),
    }
    assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0
    task = await conn.fetchrow("SELECT kind, held FROM amrita_memory.rederive_task")
    assert task["kind"] == "memory"
    assert json.loads(task["held"])["content"] == "用户喜欢猫，对花生过敏"


async def test_forgetting_the_merged_memory_itself_reaches_what_was_merged_into_it(
    conn: asyncpg.Connection,
) -> None:
    await _model(conn)
    line = await _line(conn, P, "10001", "我对花生过敏")
    gone = "0123456789abcdef0123456789abcdef"
    await _edge(conn, ("memory", P, gone), ("chat_line", P, line))
    keep = await _memory(conn, P, "用户对花生过敏")
    await _edge(conn, ("memory", P, keep), ("memory", P, gone), cycle=1)
    await _edge(conn, ("memory", P, keep), ("memory", P, keep), cycle=1)
    await conn.execute(
        "INSERT INTO amrita_memory.memory_change (partition_key, memory_id, at, actor_kind, op, before)"
        " VALUES ($1, $2, now(), 'l3', 'merge', '{\"content\": \"我对花生过敏\"}')",
        P,
        gone,
    )
    await _forget(conn, [keep])
    assert "花生" not in await _dump_text(conn)
    ledger = await conn.fetchrow("SELECT memory_ids FROM amrita_memory.erasure_ledger")
    assert sorted(ledger["memory_ids"]) == sorted([keep, gone])


async def test_a_change_withholds_everything_made_from_it_and_deletes_nothing(
    conn: asyncpg.Connection,
) -> None:
    await _model(conn)
    fact = await _memory(conn, P, "用户对花生过敏")
    derived = await _memory(conn, P, "饮食：不吃花生")
    await _edge(conn, ("memory", P, derived), ("memory", P, fact), cycle=1)
    rows = await conn.fetch(
        "SELECT * FROM amrita_memory.forget_cascade_v1($1, 'change', false, NULL,"
        ' \'[{"was": "用户对花生过敏", "now": "用户不再对花生过敏"}]\', now(), false)',
        json.dumps([{"kind": "memory", "key": P, "id": fact}]),
    )
    assert {(r["action"], r["row_id"]) for r in rows if r["action"] != "rows"} == {
        ("changed", fact),
        ("withhold", derived),
    }
    assert await conn.fetchval("SELECT array_agg(id) FROM amrita_memory.memory") == [fact]
    task = await conn.fetchrow("SELECT sources, about, reason FROM amrita_memory.rederive_task")
    assert task["reason"] == "change"
    assert json.loads(task["sources"]) == [{"kind": "memory", "key": P, "id": fact}]
    # the history records the withheld memory's removal as any delete
    assert (
        await conn.fetchval(
            "SELECT op FROM amrita_memory.memory_change WHERE memory_id = $1 ORDER BY seq DESC LIMIT 1",
            derived,
        )
        == "delete"
    )


async def test_an_erasure_removes_a_person_everywhere_and_its_ledger_survives_a_restore(
    conn: asyncpg.Connection,
) -> None:
    await _model(conn)
    mine = await _memory(conn, P, "用户的生日是五月三日")
    group_memory = await _memory(conn, G, "群友10001的猫叫团子", author="10001")
    theirs = await _memory(conn, Q, "用户喜欢狗")
    await _line(conn, P, "10001", "我生日五月三日")
    group_line = await _line(conn, G, "10001", "我家猫叫团子")
    other_line = await _line(conn, G, "10002", "我家狗叫旺财")
    group_summary = await _memory(conn, G, "群里有人养猫也有人养狗")
    await _edge(conn, ("memory", G, group_summary), ("chat_line", G, group_line))
    await _edge(conn, ("memory", G, group_summary), ("chat_line", G, other_line))
    await _edge(conn, ("knowledge", "", "0000000b"), ("memory", P, mine), cycle=4)
    await conn.execute(
        "INSERT INTO amrita_memory.knowledge (kid, title, summary, embedding, embed_fingerprint)"
        " VALUES ('0000000b', '生日', '五月三日', $1::text::vector, 'f')",
        VEC,
    )
    await conn.execute(
        "INSERT INTO amrita_memory.memo (partition_key, content) VALUES ($1, '生日五月三日')", P
    )
    await conn.execute(
        "INSERT INTO amrita_memory.activity_heatmap (user_key, weekday, slot, hits) VALUES ($1, 1, 1, 3)",
        P,
    )
    await conn.execute(
        "INSERT INTO amrita_memory.admin_audit (actor, role, action, partition_key, target_id, detail, ok)"
        " VALUES ('alice', 'admin', 'memory.add', $1, $2, '{\"content\": \"用户的生日是五月三日\"}', true)",
        P,
        mine,
    )
    await conn.execute(
        "INSERT INTO amrita_memory.memory_access (partition_key, memory_id, at, surface, who, query)"
        " VALUES ($1, $2, now(), 'tool', '10001', '生日')",
        G,
        group_memory,
    )
    receipt = await conn.fetch(
        "SELECT * FROM amrita_memory.erase_partition_v1($1, 'test', now(), false, true)", P
    )
    counts = {r["kind"]: r["n"] for r in receipt if r["action"] == "rows"}
    # the personal memory, the group memory they authored, and the group memory made from
    # their line and another's (withheld: it leaves the table for its task)
    assert counts["memory"] == 3
    assert counts["chat_log"] == 2 and counts["memo"] == 1 and counts["activity_heatmap"] == 1
    assert counts["knowledge"] == 1
    text = await _dump_text(conn)
    for marker in ("五月三日", "团子", P):
        assert marker not in text, marker
    assert "旺财" in text and "用户喜欢狗" in text
    # the group memory made from two people's lines is withheld without content
    task = await conn.fetchrow("SELECT * FROM amrita_memory.rederive_task")
    assert task["kind"] == "memory" and task["held"] is None and task["partition_key"] == G
    assert json.loads(task["sources"]) == [{"kind": "chat_line", "key": G, "id": other_line}]
    assert (
        await conn.fetchval("SELECT count(*) FROM amrita_memory.memory WHERE id = $1", theirs) == 1
    )

    # A backup from before the erasure comes back (here: the rows inserted again); the
    # ledger, applied after the load, removes them again.
    again = await _memory(conn, P, "用户的生日是五月三日")
    await _line(conn, G, "10001", "我家猫叫团子")
    applied = await conn.fetch("SELECT * FROM amrita_memory.erasure_ledger_apply_v1(now())")
    assert [(r["kind"], r["removed"] >= 2) for r in applied] == [("erase", True)]
    assert (
        await conn.fetchval("SELECT count(*) FROM amrita_memory.memory WHERE id = $1", again) == 0
    )
    assert "团子" not in await _dump_text(conn)
