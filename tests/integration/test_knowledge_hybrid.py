"""Hybrid knowledge search (knowledge_search_v2, sql/functions/knowledge.sql): keyword mode
finds an exact name or number in an entry's body that the summary's vector cannot, hybrid
ranks it first, vector mode ranks by the summary vector's distance, every write path stores
the tokens, modes are checked on every surface, and the token backfill fills in entries
without tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply
from amrita_memory_pg.domain.knowledge import KnowledgeEntry, knowledge_search_text
from amrita_memory_pg.domain.tokens import search_tokens
from amrita_memory_pg.maintenance.tokens import backfill_tokens
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import CycleContext, ToolContext
from tests.support.cli import run_cli
from tests.support.memory import memory_on

SUPER = ToolContext(platform="qq", user_id="1", roles=frozenset({"superuser"}))
LOOP = ToolContext(
    platform="qq",
    user_id="1",
    cycle=CycleContext(cycle_id=1, target_key="QQPlatform_Private_1", dry_run=False),
)
#: (title, summary, body). The model number is only in the target's body: the summary
#: vectors (the hashing model) know nothing of it, so the vector ranking has no signal:
#: hash collisions and kid order rank (fill() gives the target the last kid, ffff4471).
TARGET = (
    "设备档案",
    "办公设备的维护记录",
    "型号 XJ-4471 的打印机保修 36 个月，报修电话 400-820-7788。",
)
ENTRIES = [
    ("耗材", "各种打印机的耗材清单", "墨盒每季度更换一次。"),
    ("报销", "差旅报销的审批步骤", "先填申请单，再交财务。"),
    ("会议室", "会议室的预订规则", "提前一天在系统里预订。"),
    ("门禁", "门禁卡的办理与挂失", "丢失后到前台挂失补办，型号不限。"),
    TARGET,
    ("网络", "办公室无线网络的连接方法", "密码每月更换，见公告栏。"),
]
QUERY = "型号 XJ-4471"
#: the vector ranking stated plainly: the L2 distance of the summary's vector, then kid
BY_DISTANCE = (
    "SELECT kid, embedding <-> $1 AS distance FROM amrita_memory.knowledge ORDER BY 2, 1 LIMIT $2"
)


@pytest.fixture
async def mem(db_dsn: str, tmp_path: Path) -> Any:
    async with memory_on(db_dsn, tmp_path, subconscious__enabled=True) as opened:
        yield opened


async def fill(mem: Memory) -> dict[str, str]:
    """The entries, written through the service (as an import does, under given kids);
    title → kid."""
    kids = {}
    for n, (title, summary, body) in enumerate(ENTRIES):
        kid = "ffff4471" if title == TARGET[0] else f"{n:08x}"
        await mem.knowledge.create(kid=kid, title=title, summary=summary, body=body)
        kids[title] = kid
    return kids


async def search(mem: Memory, args: dict[str, Any]) -> Any:
    return json.loads(await mem.call_tool("knowledge_search", args, SUPER))


async def test_keyword_finds_the_model_number_the_summary_vector_misses_and_hybrid_ranks_it_first(
    mem: Memory,
) -> None:
    kids = await fill(mem)
    target = kids[TARGET[0]]

    vector = await search(mem, {"query": QUERY, "mode": "vector", "top_k": 6})
    assert vector["mode"] == "vector"
    # the summaries say nothing of XJ-4471: no signal (hash collisions and kid order rank)
    assert [i["kid"] for i in vector["items"]].index(target) >= 3
    # vector mode: the entries by the summary vector's distance (kid ties), and those distances
    plain = await mem.pool.fetch(BY_DISTANCE, await mem.knowledge.embedder.embed_query(QUERY), 6)
    assert [(i["kid"], i["distance"]) for i in vector["items"]] == [
        (r["kid"], pytest.approx(r["distance"], abs=1e-9)) for r in plain
    ]
    assert all("keyword_score" not in i for i in vector["items"])

    keyword = await search(mem, {"query": QUERY, "mode": "keyword"})
    # only the entries sharing a token; the model number outweighs a common word
    assert [i["kid"] for i in keyword["items"]] == [target, kids["门禁"]]
    assert keyword["items"][0]["distance"] is None  # no vector in keyword mode
    assert keyword["items"][0]["keyword_score"] == keyword["items"][0]["score"] > 0

    hybrid = await search(mem, {"query": QUERY, "top_k": 6})  # the default mode
    assert hybrid["mode"] == "hybrid"
    assert hybrid["items"][0]["kid"] == target
    assert hybrid["items"][0]["distance"] is not None
    assert len(hybrid["items"]) == 6  # every entry has a vector: all are candidates

    # the number of the body is found too, and a number the entries do not hold is not
    phone = await mem.knowledge.search("报修电话 400-820-7788", 3, mode="keyword")
    assert phone[0].kid == target
    assert await mem.knowledge.search("9999", 3, mode="keyword") == []


async def test_keyword_mode_ranks_by_bm25_and_rrf_fuses_like_the_memories(mem: Memory) -> None:
    kids = await fill(mem)
    # BM25 statistics are the whole table's: a token in one entry outweighs one in two
    rows = await mem.pool.fetch(
        "SELECT kid, keyword_score FROM amrita_memory.knowledge_search_v2(NULL, $1, 'keyword', 10)",
        ["4471", "型号"],
    )
    scores = {r["kid"]: r["keyword_score"] for r in rows}
    assert set(scores) == {kids[TARGET[0]], kids["门禁"]}
    assert scores[kids[TARGET[0]]] > scores[kids["门禁"]]
    # rrf: 1/(k + vector rank) + 1/(k + keyword rank)
    vector = await mem.knowledge.embedder.embed_query(QUERY)
    tokens = search_tokens(QUERY)
    fused = await mem.pool.fetch(
        "SELECT kid, score FROM amrita_memory.knowledge_search_v2($1, $2, 'hybrid', 10, 'rrf', 60, 0.5)",
        vector,
        tokens,
    )
    vrank = [r["kid"] for r in await mem.pool.fetch(BY_DISTANCE, vector, 10)]
    krank = [
        r["kid"]
        for r in await mem.pool.fetch(
            "SELECT kid FROM amrita_memory.knowledge_search_v2(NULL, $1, 'keyword', 10)", tokens
        )
    ]
    expected = {
        kid: 1 / (60 + vrank.index(kid) + 1)
        + (1 / (60 + krank.index(kid) + 1) if kid in krank else 0)
        for kid in vrank
    }
    assert {r["kid"]: r["score"] for r in fused} == pytest.approx(expected)
    # in the score's order; which entry leads is the vector ranks' (no signal: the summaries'
    # half-precision rounding orders them), so the weighted fusion's test above, which
    # counts such a spread as none, is the one that ranks the target first
    assert [r["score"] for r in fused] == sorted((r["score"] for r in fused), reverse=True)
    assert kids[TARGET[0]] in {r["kid"] for r in fused}


async def test_every_write_path_stores_the_tokens_of_the_whole_entry(mem: Memory) -> None:
    async def stored(kid: str) -> list[str]:
        value = await mem.pool.fetchval(
            "SELECT tsvector_to_array(search_tokens) FROM amrita_memory.knowledge WHERE kid = $1",
            kid,
        )
        return sorted(value)

    async def expected(kid: str) -> list[str]:
        entry = await mem.knowledge.get(kid)
        return sorted(search_tokens(knowledge_search_text(entry.title, entry.summary, entry.body)))

    created = await mem.knowledge.create(title="咖啡", summary="咖啡豆", body="第一行\n第二行")
    kid = created.kid
    assert await stored(kid) == await expected(kid)
    assert "第二" in await stored(kid)
    # a line-range edit: the new body is made in SQL, its tokens in the same transaction
    await mem.knowledge.update(kid, body="阿拉比卡 Arabica", start_line=1, end_line=2)
    assert (await mem.knowledge.get(kid)).body == "第一行\n阿拉比卡 Arabica"
    assert await stored(kid) == await expected(kid)
    assert "第二" not in await stored(kid) and "arabica" in await stored(kid)
    hits = await mem.knowledge.search("arabica", 1, mode="keyword")
    assert [h.kid for h in hits] == [kid]
    # title / summary edits, and the L3 loop's tools
    await mem.knowledge.update(kid, title="手冲咖啡", summary="手冲咖啡的水温")
    assert await stored(kid) == await expected(kid)
    made = json.loads(
        await mem.registries["consolidation"].call(
            "subconscious_knowledge_create",
            {"title": "茶", "summary": "绿茶的冲泡", "body": "龙井 80 度"},
            LOOP,
        )
    )
    assert await stored(made["kid"]) == await expected(made["kid"])
    await mem.registries["consolidation"].call(
        "subconscious_knowledge_update",
        {"kid": made["kid"], "body": "碧螺春 75 度", "start_line": 0},
        LOOP,
    )
    assert "碧螺" in await stored(made["kid"]) and "龙井" not in await stored(made["kid"])
    # imports (Markdown import, legacy import) go through put: create or update
    assert await mem.knowledge.put(
        KnowledgeEntry("0badc0de", "导入", "导入的摘要", "正文 Z-9")
    ) == ("created")
    assert await stored("0badc0de") == await expected("0badc0de")
    await mem.knowledge.put(KnowledgeEntry("0badc0de", "导入", "导入的摘要", "正文 Q-7"))
    assert "q" in await stored("0badc0de") and "z" not in await stored("0badc0de")
    # a refused update changes neither the text nor its tokens
    before = await stored(kid)
    with pytest.raises(Exception, match="行范围越界"):
        await mem.knowledge.update(kid, body="x", start_line=5, end_line=9)
    assert await stored(kid) == before
    assert (
        await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.knowledge WHERE search_tokens IS NULL"
        )
        == 0
    )


async def test_modes_are_checked_on_every_surface(mem: Memory, db_dsn: str) -> None:
    await fill(mem)
    bad = await search(mem, {"query": QUERY, "mode": "fuzzy"})
    assert bad["status"] == "error"
    assert "mode" in bad["message"] and "hybrid" in bad["message"] and "keyword" in bad["message"]
    loop_found = json.loads(
        await mem.registries["consolidation"].call(
            "subconscious_knowledge_search", {"query": QUERY, "mode": "keyword"}, LOOP
        )
    )
    assert loop_found["mode"] == "keyword" and loop_found["items"][0]["title"] == TARGET[0]

    # SQL: SQLSTATE 22023 for a bad mode or fusion, or a vector search without a vector
    for args in (
        (None, ["x"], "fuzzy", 5, "weighted"),
        (None, ["x"], "keyword", 5, "sum"),
        (None, ["x"], "hybrid", 5, "weighted"),
    ):
        with pytest.raises(asyncpg.InvalidParameterValueError):
            await mem.pool.fetch(
                "SELECT * FROM amrita_memory.knowledge_search_v2($1, $2, $3, $4, $5)", *args
            )

    # /memory knowledge search mode=X
    command = MemoryCommand.over(mem)

    async def run(text: str) -> str:
        reply = await command.run(SUPER, text)
        assert isinstance(reply, TextReply)
        return reply.text

    refused = await run("knowledge search mode=fuzzy 型号")
    assert "未知的检索方式" in refused and "mode=keyword" in refused
    first = (await run(f"knowledge search mode=keyword {QUERY}")).splitlines()[1]
    assert TARGET[0] in first and "得分" in first and "距离" not in first
    by_vector = await run(f"knowledge search mode=vector {QUERY}")
    assert "距离越小越相似" in by_vector and "得分" not in by_vector
    assert "得分" in await run(f"knowledge search {QUERY}")  # default hybrid

    # CLI --mode
    env = {"AMRITA_MEMORY_DATABASE__URL": db_dsn, "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash"}
    refused = run_cli("knowledge", "search", QUERY, "--mode", "fuzzy", env=env)
    assert refused.returncode == 2 and "fuzzy" in refused.stderr
    found = run_cli("knowledge", "search", QUERY, "--mode", "keyword", "--top-k", "1", env=env)
    assert found.returncode == 0, found.stderr
    assert TARGET[0] in found.stdout and "  -  " in found.stdout  # no distance without a vector


async def test_backfill_gives_old_entries_their_tokens_in_resumable_batches(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path, subconscious__enabled=True) as mem:
        kids = await fill(mem)
        # entries restored from a backup have no tokens
        await mem.pool.execute("UPDATE amrita_memory.knowledge SET search_tokens = NULL")
        assert await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.knowledge WHERE search_len IS NULL"
        ) == len(ENTRIES)
        # ... and are found by their vector only
        assert await mem.knowledge.search(QUERY, 5, mode="keyword") == []
        hybrid = await mem.knowledge.search(QUERY, 6, mode="hybrid")
        assert len(hybrid) == len(ENTRIES) and all(h.keyword_score == 0 for h in hybrid)

        part = await backfill_tokens(mem.pool, batch_size=20, max_batches=2)  # 2 entries a batch
        assert (part.knowledge_tokenized, part.knowledge_remaining) == (4, 2)
        rest = await backfill_tokens(mem.pool, batch_size=20)
        assert (rest.knowledge_tokenized, rest.knowledge_remaining) == (2, 0)
        again = await backfill_tokens(mem.pool)
        assert (again.knowledge_tokenized, again.knowledge_remaining) == (0, 0)
        found = await mem.knowledge.search(QUERY, 5, mode="keyword")
        assert found[0].kid == kids[TARGET[0]]
        assert await mem.pool.fetchval("SELECT min(search_len) FROM amrita_memory.knowledge") > 0

        # --all recomputes every entry's tokens; an entry whose text changed meanwhile
        # keeps the tokens its edit stored (the backfill compares the text)
        stale = await mem.pool.fetchrow(
            "SELECT kid, title, summary, body FROM amrita_memory.knowledge ORDER BY kid LIMIT 1"
        )
        await mem.pool.execute(
            "UPDATE amrita_memory.knowledge SET search_tokens = array_to_tsvector('{junk}')"
        )
        assert not await mem.pool.fetchval(
            "SELECT amrita_memory.knowledge_set_tokens_v1($1, $2, $3, $4, $5, true)",
            stale["kid"],
            stale["title"],
            stale["summary"],
            "another body",
            ["wrong"],
        )
    cli = run_cli(
        "tokens",
        "backfill",
        "--all",
        env={"AMRITA_MEMORY_DATABASE__URL": db_dsn, "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash"},
    )
    assert cli.returncode == 0, cli.stderr
    assert f"tokenized {len(ENTRIES)} knowledge entries; 0 still without tokens" in cli.stdout
    async with memory_on(db_dsn, tmp_path, startup=True) as mem:
        junk = await mem.pool.fetchval(
            "SELECT count(*) FROM amrita_memory.knowledge WHERE search_tokens @@ 'junk'::tsquery"
        )
        assert junk == 0
