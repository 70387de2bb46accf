"""The search (search_memories_v6 since 0.6.0, v5 before): the same results as v4.

Same rows, same order, the same scores as search_memories_v4 (bit-identical in vector
mode; BM25 sums a row's tokens in the order the plan meets them, so keyword and hybrid
scores agree to 1e-12) in every mode and fusion, with and without decay and filters, at the exact path and on a partition with
its own HNSW index; vector mode therefore stays release 3's (test_hybrid_search.py pins
v4's vector mode to search_memories_v3). Compared with v4, not v3: releases 1-3 may be
retired. The named query binds a MemoryQuery by argument name,
and those names are the SQL function's (pg_proc of the migrated schema).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import asyncpg
import numpy as np
import pytest

from amrita_memory_pg.domain.decay import DecayPolicy
from amrita_memory_pg.domain.records import MemoryQuery, NewMemory, Ranking, SearchFilter
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.maintenance.ann import maintain_ann_indexes
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.memories import insert_args
from amrita_memory_pg.storage.pgvector import search_args, search_statement
from amrita_memory_pg.storage.queries import bind, catalogue, named_params, query
from tests.integration.test_hybrid_search import BIG, KEY, NOW, fill, insert, unit

V4 = (
    "SELECT * FROM amrita_memory.search_memories_v4("
    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 200, $16, 60, $17)"
)


@pytest.mark.usefixtures("retired_sql")  # v4 is retired (0036): re-installed as released
async def test_v5_is_v4_bit_for_bit_in_every_mode_and_path(memory: Memory) -> None:
    rng = random.Random(11)
    await fill(memory, KEY, 120, rng)
    await fill(memory, BIG, 320, rng)
    assert len((await maintain_ann_indexes(memory.pool, min_rows=300)).built) == 1
    dim = len(await memory.embedder.embed_query("x"))
    filters: list[tuple[Any, ...]] = [
        (None, None, None, None, None),
        (4, 7, None, None, None),
        (None, None, "group", ["猫", "茶"], None),
    ]
    compared = {"vector": 0, "keyword": 0, "hybrid": 0}
    n = 0
    for partition in (KEY, BIG):
        for decay in (True, False):
            for flt in filters:
                for text in ("北京 旅行 考试", "猫 咖啡", "没有这个词"):
                    n += 1
                    vec = np.random.default_rng(n).standard_normal(dim).astype(np.float32)
                    tokens = search_tokens(text)
                    for mode, fusion, weight in (
                        ("vector", "rrf", 0.5),
                        ("keyword", "rrf", 0.5),
                        ("hybrid", "rrf", 0.5),
                        ("hybrid", "weighted", 0.4),
                    ):
                        q = None if mode == "keyword" else vec
                        head = (partition, q, tokens, mode, 7, NOW, decay, 30.0, 1.0, 0.05)
                        old = [
                            tuple(r)
                            for r in await memory.pool.fetch(V4, *head, *flt, fusion, weight)
                        ]
                        query = MemoryQuery(
                            partition,
                            q,
                            NOW,
                            top_k=7,
                            ranking=Ranking(
                                mode=mode,  # type: ignore[arg-type]
                                tokens=tuple(tokens),
                                fusion=fusion,  # type: ignore[arg-type]
                                keyword_weight=weight,
                            ),
                            where=SearchFilter(
                                importance_min=flt[0],
                                importance_max=flt[1],
                                scope=flt[2],
                                tags=tuple(flt[3]) if flt[3] else None,
                                category=flt[4],
                            ),
                            decay=DecayPolicy(enabled=decay),
                        )
                        sql, args = search_statement(query, 200)
                        new = [tuple(r) for r in await memory.pool.fetch(sql, *args)]
                        where = (partition, decay, flt, text, mode, fusion)
                        if mode == "vector":  # release 3's scores, bit for bit
                            assert new == old, where
                        else:  # BM25 sums its tokens in row order: equal to the last bit or so
                            assert [r[:12] for r in new] == [r[:12] for r in old], where
                            for a, b in zip(new, old, strict=True):
                                assert a[12:] == pytest.approx(b[12:], rel=1e-12), where
                        compared[mode] += bool(old)
    assert min(compared.values()) >= 10


async def test_category_filter_inside_the_hnsw_scan(memory: Memory) -> None:
    """On an HNSW partition the category is a filter of the index scan itself, so a
    category search still finds its rows when none of them is among the nearest."""
    rng = random.Random(3)
    await fill(memory, BIG, 320, rng)
    rule = await memory.memories.add(
        partition_key=BIG, scope="group", content="群规：禁止刷屏", category="rule", now=NOW
    )
    assert len((await maintain_ann_indexes(memory.pool, min_rows=300)).built) == 1
    for mode in ("vector", "hybrid"):
        hits = await memory.memories.search(
            BIG, "今天天气", top_k=3, now=NOW, mode=mode, category="rule"
        )
        assert [h.record.id for h in hits] == [rule.id]


async def proc_args(conn: Any, function: str) -> tuple[set[str], set[str]]:
    """(every IN argument name, those without a default) of amrita_memory.<function>."""
    row = await conn.fetchrow(
        "SELECT p.proargnames, p.proargmodes::text[] AS proargmodes, p.pronargs, p.pronargdefaults "
        "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'amrita_memory' AND p.proname = $1",
        function,
    )
    assert row is not None, f"amrita_memory.{function} is not installed"
    modes = row["proargmodes"] or ["i"] * len(row["proargnames"])
    names = [n for n, m in zip(row["proargnames"], modes, strict=False) if m in ("i", "b")]
    required = names[: row["pronargs"] - row["pronargdefaults"]]
    return set(names), set(required)


async def test_named_bindings_match_the_sql_functions(conn: asyncpg.Connection) -> None:
    """Every named query that calls a function by argument name (``p_x => $n``) names
    only arguments the function has and every one it requires; the Python bindings send
    exactly the statement's names. Fails when either side changes alone."""
    checked = 0
    for name, item in catalogue().items():
        params = named_params(name)
        if not params:
            continue
        function = item.sql.split("amrita_memory.", 1)[1].split("(", 1)[0]
        names, required = await proc_args(conn, function)
        assert set(params) <= names, (name, sorted(set(params) - names))
        assert required <= set(params), (name, sorted(required - set(params)))
        checked += 1
    assert checked >= 1
    # the search binding: a MemoryQuery's arguments are the statement's, exactly
    args = search_args(MemoryQuery(KEY, None, NOW))
    assert set(args) == set(named_params("search_memories"))
    assert bind("search_memories", args)[0] == KEY
    with pytest.raises(ValueError, match="missing"):
        bind("search_memories", {k: v for k, v in args.items() if k != "p_floor"})
    with pytest.raises(ValueError, match="unknown"):
        bind("search_memories", {**args, "p_nope": 1})
    # the write bindings: a NewMemory's arguments are insert_memory's, write_memory's
    # are those plus the dedup window
    new = NewMemory(KEY, "user", "记忆", None, "fp", NOW)
    inserted = insert_args(new, Provider("hash", "m", ""), 10)
    assert set(inserted) == set(named_params("insert_memory"))
    assert set(inserted) | {"p_dedup_seconds"} == set(named_params("write_memory"))
    # and the read_memory statement takes the search's arguments and the log's
    assert set(search_args(MemoryQuery(KEY, None, NOW))) < set(named_params("recall_memories"))


@dataclass(frozen=True)
class Provider:
    protocol: str
    model: str
    base_url: str


async def test_read_memory_is_one_statement_pause_first_and_a_failed_log_keeps_the_hits(
    conn: asyncpg.Connection,
) -> None:
    """recall_memories_v2 (v1 before): the hits and their access log in one statement; a paused
    partition answers one status row and nothing is searched or logged; a failing log
    leaves the hits and says why in a status row."""
    q = unit([1, 0, 0, 0])
    cat = await insert(conn, "用户喜欢猫", q)
    search = search_args(
        MemoryQuery(KEY, None, NOW, top_k=3, ranking=Ranking(mode="keyword", tokens=("猫",)))
    )
    log = {"p_chat": KEY, "p_who": "1", "p_query_text": "猫", "p_surface": "tool"}
    args = {**search, **log, "p_keep": 20, "p_log": True}

    async def recall() -> list[asyncpg.Record]:
        return list(await conn.fetch(query("recall_memories"), *bind("recall_memories", args)))

    async def logged() -> int:
        return int(await conn.fetchval("SELECT count(*) FROM amrita_memory.memory_access"))

    rows = await recall()
    assert [(r["id"], r["paused"], r["log_error"]) for r in rows] == [(cat, False, None)]
    assert await logged() == 1
    await conn.execute(
        "INSERT INTO amrita_memory.paused_partition (partition_key, paused_at, paused_by) "
        "VALUES ($1, now(), 'test')",
        KEY,
    )
    rows = await recall()
    assert [(r["id"], r["paused"]) for r in rows] == [(None, True)]
    assert await logged() == 1
    await conn.execute("DELETE FROM amrita_memory.paused_partition")
    await conn.execute(
        "ALTER FUNCTION amrita_memory.log_access_v1(text[], text[], float8[], timestamptz, "
        "text, text, text, text, integer) RENAME TO log_access_broken"
    )
    rows = await recall()
    assert [r["id"] for r in rows] == [cat, None]
    assert "log_access_v1" in rows[1]["log_error"] and not rows[1]["paused"]
    assert await logged() == 1
