"""The L2 chat tools: reference-compatible replies, the fixed bugs, bad input, permissions."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from amrita_memory_pg.bootstrap import open_memory
from amrita_memory_pg.domain.decay import DecayPolicy, decay_score
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.tools.context import ToolContext
from tests.support.vectors import assert_index_in_step, indexed_ids

ALICE = ToolContext(platform="qq", user_id="10001")
ALICE_IN_GROUP = ToolContext(platform="qq", user_id="10001", group_id="555")
BOB_IN_GROUP = ToolContext(platform="qq", user_id="20002", group_id="555")
ADMIN_IN_GROUP = ToolContext(
    platform="qq", user_id="30003", group_id="555", roles=frozenset({"admin"})
)
ROOT_IN_GROUP = ToolContext(
    platform="qq", user_id="40004", group_id="555", roles=frozenset({"superuser"})
)
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$")


async def call(mem: Memory, tool: str, ctx: ToolContext = ALICE, **args: Any) -> dict[str, Any]:
    reply = await mem.call_tool(tool, args, ctx)
    data = json.loads(reply)
    assert isinstance(data, dict)
    return data


async def write(mem: Memory, content: str, ctx: ToolContext = ALICE, **kw: Any) -> str:
    args = {"content": content, "tags": "t", "importance": "medium", "scope": "user", **kw}
    data = await call(mem, "write_memory", ctx, **args)
    assert data["status"] == "success", data
    return str(data["memory_id"])


async def rows(mem: Memory) -> int:
    return int(await mem.pool.fetchval("SELECT count(*) FROM amrita_memory.memory"))


# ---------------------------------------------------------------- write / read


async def test_write_reply_matches_the_reference_envelope(memory: Memory) -> None:
    data = await call(
        memory,
        "write_memory",
        content="我喜欢吃辣的川菜",
        tags="preference, food",
        importance="high",
        scope="user",
    )
    assert list(data) == ["memory_id", "tags", "importance", "scope", "created_at", "status"]
    assert re.fullmatch(r"[0-9a-f]{32}", data["memory_id"])
    assert data["tags"] == "preference,food"
    assert (data["importance"], data["scope"], data["status"]) == ("high", "user", "success")
    assert ISO_UTC.match(data["created_at"]), data["created_at"]  # B10: one format, +00:00
    assert await assert_index_in_step(memory) == {data["memory_id"]}


async def test_stored_importance_and_source(memory: Memory) -> None:
    mid = await write(memory, "事实", importance="high", category="preference")
    row = await memory.pool.fetchrow(
        "SELECT importance, source, author, category, partition_key, scope FROM amrita_memory.memory WHERE id = $1",
        mid,
    )
    assert dict(row) == {
        "importance": 8,
        "source": "auto",
        "author": "10001",
        "category": "preference",
        "partition_key": "QQPlatform_Private_10001",
        "scope": "user",
    }


async def test_read_returns_the_reference_shape_with_status(memory: Memory) -> None:
    spicy = await write(memory, "我喜欢吃辣的川菜", tags="food")
    await write(memory, "明天要去北京出差", tags="trip")
    # mode=vector: the reference's ranking (hybrid, the default, adds a keyword rank)
    data = await call(memory, "read_memory", query="喜欢吃辣的菜", scope="user", mode="vector")
    assert data["status"] == "success"  # B11
    assert data["mode"] == "vector"
    for key in ("ids", "documents", "metadatas", "distances"):
        assert isinstance(data[key], list) and len(data[key]) == 1
    assert data["ids"][0][0] == spicy
    assert data["documents"][0][0] == "我喜欢吃辣的川菜"
    meta = data["metadatas"][0][0]
    assert meta["user_id"] == "QQPlatform_Private_10001"
    assert meta["importance"] == "medium" and meta["tags"] == "food" and meta["scope"] == "user"
    assert ISO_UTC.match(meta["created_at"])
    assert 0 < meta["decay_score"] <= 1
    distances = data["distances"][0]
    assert distances == sorted(distances)  # same age and importance: decay order = distance order


async def test_importance_filter_works(memory: Memory) -> None:
    """B1: the reference's importance filter always errored; here it is an AND filter."""
    await write(memory, "猫咪的名字叫咪咪", importance="low")
    high = await write(memory, "猫咪对鱼过敏", importance="high")
    await write(memory, "猫咪三岁了", importance="medium")
    data = await call(
        memory, "read_memory", query="猫咪", scope="user", importance="high", top_k=10
    )
    assert data["ids"] == [[high]]
    assert [m["importance"] for m in data["metadatas"][0]] == ["high"]


async def test_tags_filter_matches_any_tag(memory: Memory) -> None:
    a = await write(memory, "喜欢爬山", tags="hobby,outdoor")
    await write(memory, "喜欢写代码", tags="work")
    data = await call(memory, "read_memory", query="喜欢", scope="user", tags="outdoor，travel")
    assert data["ids"] == [[a]]


async def test_top_k_is_clamped_to_1_50(memory: Memory) -> None:
    for i in range(3):
        await write(memory, f"记忆 {i}")
    assert (
        len((await call(memory, "read_memory", query="记忆", scope="user", top_k=0))["ids"][0]) == 1
    )
    assert (
        len((await call(memory, "read_memory", query="记忆", scope="user", top_k=-5))["ids"][0])
        == 1
    )
    assert (
        len((await call(memory, "read_memory", query="记忆", scope="user", top_k=10_000))["ids"][0])
        == 3
    )


async def test_a_clamped_top_k_says_so_in_the_reply(memory: Memory) -> None:
    """Asking for more than 50 is not silently answered with fewer."""
    for i in range(3):
        await write(memory, f"记忆 {i}")
    data = await call(memory, "read_memory", query="记忆", scope="user", top_k=80)
    assert data["status"] == "success"
    assert data["top_k"] == 50
    assert data["notice"] == "top_k=80 超出范围 1–50，已按 top_k=50 检索"
    low = await call(memory, "read_memory", query="记忆", scope="user", top_k=0)
    assert low["top_k"] == 1 and "top_k=0 超出范围 1–50" in low["notice"]
    within = await call(memory, "read_memory", query="记忆", scope="user", top_k=50)
    assert "notice" not in within and "top_k" not in within


async def test_read_memory_modes(memory: Memory) -> None:
    """mode = vector | keyword | hybrid (default hybrid); anything else is refused."""
    number = await write(memory, "阿杰的新手机号尾号 2046，旧号码已经停机")
    await write(memory, "阿杰喜欢打篮球，周末常去球场")
    for mode in ("vector", "keyword", "hybrid"):
        data = await call(memory, "read_memory", query="阿杰手机尾号 2046", scope="user", mode=mode)
        assert data["status"] == "success" and data["mode"] == mode
        assert data["ids"][0][0] == number
    keyword = await call(memory, "read_memory", query="2046", scope="user", mode="keyword")
    assert keyword["ids"] == [[number]]  # only memories sharing a token
    assert keyword["distances"] == [[None]]  # keyword mode embeds no query
    assert keyword["metadatas"][0][0]["keyword_score"] > 0
    default = await call(memory, "read_memory", query="2046", scope="user")
    assert default["mode"] == "hybrid"
    for bad in ("fuzzy", "", 3):
        refused = await call(memory, "read_memory", query="2046", scope="user", mode=bad)
        assert refused["status"] == "error"
        assert "mode" in refused["message"] and "hybrid" in refused["message"]


async def test_empty_partition_reads_empty_lists(memory: Memory) -> None:
    data = await call(memory, "read_memory", query="任何", scope="user")
    assert data["status"] == "success"
    assert data["ids"] == [[]] and data["documents"] == [[]] and data["distances"] == [[]]


async def test_results_are_the_true_top_k_by_decayed_score(memory: Memory) -> None:
    """Every row of a small partition is scored: a fresh, farther memory beats an old exact match."""
    now = datetime.now(UTC)
    store = memory.memories
    old = await store.add(
        partition_key=ALICE.personal_key,
        scope="user",
        content="喜欢 咖啡",
        importance=3,
        now=now - timedelta(days=400),
    )
    fresh = [
        await store.add(
            partition_key=ALICE.personal_key,
            scope="user",
            content=f"喜欢 咖啡 和 茶 {i}",
            importance=5,
            now=now,
        )
        for i in range(8)
    ]
    hits = await store.search(ALICE.personal_key, "喜欢 咖啡", top_k=3, now=now)
    by_distance = sorted(
        await store.search(ALICE.personal_key, "喜欢 咖啡", top_k=50, now=now),
        key=lambda h: h.distance,
    )
    assert by_distance[0].record.id == old.id  # the old one is the nearest…
    assert old.id not in {h.record.id for h in hits}  # …but decay ranks it out of the top 3
    assert {h.record.id for h in hits} <= {f.id for f in fresh}
    scores = [h.decay_score for h in hits]
    assert scores == sorted(scores, reverse=True)


async def test_sql_scores_match_the_reference_formula(memory: Memory) -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    store = memory.memories
    for days, imp in [(0, 3), (10, 5), (45, 8), (200, 3), (1000, 5), (3, 10), (60, 1)]:
        await store.add(
            partition_key=ALICE.personal_key,
            scope="user",
            content=f"项目 截止 日期 {days}",
            importance=imp,
            now=now - timedelta(days=days, hours=5),
        )
    policy = DecayPolicy()
    # vector mode keeps the reference's formula (§5.1); hybrid (the default) fuses ranks
    hits = await store.search(ALICE.personal_key, "项目 日期", top_k=50, now=now, mode="vector")
    assert len(hits) == 7
    for hit in hits:
        expected = decay_score(hit.distance, hit.age_days, hit.record.importance, policy)
        assert abs(hit.decay_score - expected) <= 1e-9
        assert abs(hit.age_days - (now - hit.record.created_at).total_seconds() / 86400) <= 1e-9


@pytest.mark.parametrize("mode", ["vector", "hybrid", "keyword"])
async def test_read_memory_decay_score_is_the_reference_formula_in_every_mode(
    memory: Memory, mode: str
) -> None:
    """``decay_score`` = similarity 1/(1+distance) × decay factor in EVERY
    mode (keyword: no distance, similarity 1); the ranking key is its own ``score``."""
    now = datetime.now(UTC)
    for days, imp in [(0, 3), (10, 5), (45, 8), (200, 3), (3, 10)]:
        await memory.memories.add(
            partition_key=ALICE.personal_key,
            scope="user",
            content=f"水果 苹果 香蕉 {days}",
            importance=imp,
            now=now - timedelta(days=days, hours=5),
        )
    policy = DecayPolicy()
    data = await call(memory, "read_memory", query="水果", scope="user", mode=mode, top_k=10)
    metas, distances = data["metadatas"][0], data["distances"][0]
    assert len(metas) == 5
    for meta, distance in zip(metas, distances, strict=True):
        expected = decay_score(distance, meta["age_days"], meta["importance_level"], policy)
        # age_days is rounded to 0.01 in the reply: tolerance of one rounding step
        assert meta["decay_score"] == pytest.approx(expected, abs=2e-3)
        assert meta["decay_score"] > 0.01  # never the min-max normalised 0.0000
        assert isinstance(meta["score"], float)
        if mode == "vector":
            assert meta["score"] == meta["decay_score"]
    # the rows come in the ranking key's order
    scores = [m["score"] for m in metas]
    assert scores == sorted(scores, reverse=True)


async def test_hybrid_lists_only_relevant_rows(memory: Memory) -> None:
    """A hybrid row shares a token with the query or lies within
    HYBRID_DISTANCE_RATIO × the nearest row's distance; the rest of the partition is not
    a hit (before, all 5 rows came back, the last ones scored 0.0000)."""
    fruit = await write(memory, "我喜欢吃水果", tags="food")
    for text in ("明天要去北京出差", "周五开会讨论预算", "猫咪对鱼过敏", "车停在三号楼"):
        await write(memory, text)
    data = await call(memory, "read_memory", query="水果", scope="user", mode="hybrid")
    assert data["ids"] == [[fruit]]


async def test_ties_break_by_created_at_then_id(memory: Memory) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    ids = [
        (
            await memory.memories.add(
                partition_key=ALICE.personal_key, scope="user", content="同样的内容", now=now
            )
        ).id
        for _ in range(5)
    ]
    hits = await memory.memories.search(ALICE.personal_key, "同样的内容", top_k=5, now=now)
    assert [h.record.id for h in hits] == sorted(ids)
    page = await call(memory, "list_memory", scope="user")
    assert [m["id"] for m in page["memories"]] == sorted(ids)


async def test_decay_disabled_orders_by_distance_without_decay_score(
    make_settings: Callable[..., Settings],
) -> None:
    async with open_memory(make_settings(**{"decay.enabled": False})) as mem:
        now = datetime.now(UTC)
        await mem.memories.add(
            partition_key=ALICE.personal_key,
            scope="user",
            content="喜欢 咖啡",
            importance=3,
            now=now - timedelta(days=400),
        )
        await mem.memories.add(
            partition_key=ALICE.personal_key, scope="user", content="喜欢 咖啡 和 茶", now=now
        )
        data = await call(mem, "read_memory", query="喜欢 咖啡", scope="user", mode="vector")
        assert data["documents"][0][0] == "喜欢 咖啡"
        assert all("decay_score" not in m for m in data["metadatas"][0])


# ---------------------------------------------------------------- list / update / delete


async def test_list_pages_like_the_reference(memory: Memory) -> None:
    empty = await call(memory, "list_memory", scope="user", limit=5)
    assert empty == {"status": "success", "memories": [], "total": 0, "offset": 0, "limit": 5}
    ids = [await write(memory, f"第{i}条记忆" + "很长" * 30) for i in range(7)]
    first = await call(memory, "list_memory", scope="user", limit=5)
    assert [m["id"] for m in first["memories"]] == ids[:5]
    assert first["memories"][0]["content_preview"].endswith("...")
    assert len(first["memories"][0]["content_preview"]) == 53
    assert (first["total"], first["has_more"], first["next_offset"]) == (7, True, 5)
    second = await call(memory, "list_memory", scope="user", limit="5", offset=5)
    assert [m["id"] for m in second["memories"]] == ids[5:]
    assert (second["has_more"], second["next_offset"]) == (False, None)
    beyond = await call(memory, "list_memory", scope="user", offset=100)
    assert (beyond["memories"], beyond["total"], beyond["has_more"]) == ([], 7, False)
    clamped = await call(memory, "list_memory", scope="user", limit=500, offset=-3)
    assert (clamped["limit"], clamped["offset"]) == (50, 0)


async def test_update_keeps_age_changes_content_and_vector(memory: Memory) -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    rec = await memory.memories.add(
        partition_key=ALICE.personal_key, scope="user", content="住在上海", now=created
    )
    data = await call(
        memory, "update_memory", id=rec.id, scope="user", content="搬家到了北京", importance="high"
    )
    assert data == {"status": "success", "message": "记忆更新成功", "id": rec.id}
    row = await memory.pool.fetchrow(
        "SELECT content, importance, created_at, updated_at, tags FROM amrita_memory.memory WHERE id = $1",
        rec.id,
    )
    assert row["content"] == "搬家到了北京" and row["importance"] == 8
    assert row["created_at"] == created  # the age is kept (B4: aware UTC, not a naive local now)
    assert row["updated_at"] > created
    found = await call(memory, "read_memory", query="北京", scope="user")
    assert found["ids"][0][0] == rec.id and found["distances"][0][0] < 1.5
    # A change without a new vector (same content, new importance) is searchable at once.
    await call(memory, "update_memory", id=rec.id, scope="user", importance="low")
    low = await call(memory, "read_memory", query="北京", scope="user", importance="low")
    assert low["ids"] == [[rec.id]]
    high = await call(memory, "read_memory", query="北京", scope="user", importance="high")
    assert high["ids"] == [[]]
    assert await assert_index_in_step(memory) == {rec.id}


async def test_update_needs_a_field_and_an_existing_id(memory: Memory) -> None:
    mid = await write(memory, "事实")
    nothing = await call(memory, "update_memory", id=mid, scope="user")
    assert nothing["status"] == "error" and "至少需要" in nothing["message"]
    missing = await call(memory, "update_memory", id="0" * 32, scope="user", content="x")
    assert missing == {"status": "error", "message": "未找到指定ID的记忆"}
    # An id from someone else's partition is "not found", and is left alone.
    bob = ToolContext(platform="qq", user_id="20002")
    foreign = await call(memory, "update_memory", bob, id=mid, scope="user", content="篡改")
    assert foreign["message"] == "未找到指定ID的记忆"
    assert (
        await memory.pool.fetchval("SELECT content FROM amrita_memory.memory WHERE id = $1", mid)
        == "事实"
    )


async def test_delete_and_foreign_delete(memory: Memory) -> None:
    mid = await write(memory, "要删除的")
    bob = ToolContext(platform="qq", user_id="20002")
    assert (await call(memory, "delete_memory", bob, id=mid, scope="user"))[
        "message"
    ] == "未找到指定ID的记忆"
    assert await rows(memory) == 1
    assert await indexed_ids(memory) == {mid}
    assert await call(memory, "delete_memory", id=mid, scope="user") == {
        "status": "success",
        "message": "记忆删除成功",
        "id": mid,
    }
    assert await rows(memory) == 0
    assert await indexed_ids(memory) == set()
    again = await call(memory, "delete_memory", id=mid, scope="user")
    assert again["message"] == "未找到指定ID的记忆"


async def test_personal_memories_follow_the_user_into_groups(memory: Memory) -> None:
    mid = await write(memory, "私聊里写的个人记忆")
    data = await call(memory, "read_memory", ALICE_IN_GROUP, query="个人记忆", scope="user")
    assert data["ids"][0] == [mid]
    group = await call(memory, "read_memory", ALICE_IN_GROUP, query="个人记忆", scope="group")
    assert group["ids"] == [[]]


# ---------------------------------------------------------------- group permissions (W2)


async def test_group_memories_are_edited_by_admins_superusers_or_the_author(memory: Memory) -> None:
    mid = await write(memory, "群规：周五晚上打游戏", ctx=ALICE_IN_GROUP, scope="group")
    refused = await call(memory, "delete_memory", BOB_IN_GROUP, id=mid, scope="group")
    assert refused["status"] == "error" and "无权删除" in refused["message"]
    refused = await call(
        memory, "update_memory", BOB_IN_GROUP, id=mid, scope="group", content="改掉"
    )
    assert refused["status"] == "error" and "无权修改" in refused["message"]
    assert await rows(memory) == 1
    for ctx in (ALICE_IN_GROUP, ADMIN_IN_GROUP, ROOT_IN_GROUP):
        ok = await call(
            memory, "update_memory", ctx, id=mid, scope="group", tags=f"by-{ctx.user_id}"
        )
        assert ok["status"] == "success", (ctx, ok)
    assert (await call(memory, "delete_memory", ADMIN_IN_GROUP, id=mid, scope="group"))[
        "status"
    ] == "success"
    # Anyone in the group can read and write group memories.
    other = await write(memory, "共享的事", ctx=BOB_IN_GROUP, scope="group")
    seen = await call(memory, "read_memory", ALICE_IN_GROUP, query="共享", scope="group")
    assert seen["ids"][0] == [other]


async def test_group_edit_policy_anyone(make_settings: Callable[..., Settings]) -> None:
    async with open_memory(make_settings(group_memory_edit="anyone")) as mem:
        mid = await write(mem, "群共享", ctx=ALICE_IN_GROUP, scope="group")
        assert (await call(mem, "delete_memory", BOB_IN_GROUP, id=mid, scope="group"))[
            "status"
        ] == "success"


# ---------------------------------------------------------------- bad input writes nothing


@pytest.mark.parametrize(
    ("tool", "args", "fragment"),
    [
        (
            "write_memory",
            {"tags": "t", "importance": "low", "scope": "user"},
            "调用 write_memory 工具必须带有 content 参数",
        ),
        (
            "write_memory",
            {"content": "x", "tags": "t", "importance": "low", "scope": None},
            "必须带有 scope 参数",
        ),
        (
            "write_memory",
            {"content": "x", "tags": "t", "importance": "urgent", "scope": "user"},
            "只能是 low | medium | high",
        ),
        (
            "write_memory",
            {"content": "x", "tags": "t", "importance": "low", "scope": "everyone"},
            "只能是 group | user",
        ),
        (
            "write_memory",
            {"content": "x", "tags": "t", "importance": "low", "scope": "group"},
            "当前不在群聊中",
        ),
        (
            "write_memory",
            {"content": "   ", "tags": "t", "importance": "low", "scope": "user"},
            "content 不能为空",
        ),
        (
            "write_memory",
            {"content": "长" * 4001, "tags": "t", "importance": "low", "scope": "user"},
            "过长",
        ),
        (
            "write_memory",
            {"content": ["x"], "tags": "t", "importance": "low", "scope": "user"},
            "应为字符串",
        ),
        (
            "write_memory",
            {"content": "x", "tags": "t", "importance": "low", "scope": "user", "mood": "happy"},
            "不接受参数 mood",
        ),
        (
            "write_memory",
            {
                "content": "x",
                "tags": "t",
                "importance": "low",
                "scope": "user",
                "category": "gossip",
            },
            "只能是 preference",
        ),
        ("read_memory", {"query": "x", "scope": "user", "top_k": "many"}, "应为整数"),
        ("read_memory", {"query": "x", "scope": "user", "top_k": True}, "应为整数"),
        ("read_memory", {"query": " ", "scope": "user"}, "query 不能为空"),
        ("list_memory", {"scope": "user", "limit": 2.5}, "应为整数"),
        ("delete_memory", {"scope": "user"}, "必须带有 id 参数"),
        ("no_such_tool", {}, "未知工具 no_such_tool"),
    ],
)
async def test_bad_arguments_get_a_clear_error_and_write_nothing(
    memory: Memory, tool: str, args: dict[str, Any], fragment: str
) -> None:
    reply = await memory.call_tool(tool, args, ALICE)
    data = json.loads(reply)
    assert data["status"] == "error"
    assert fragment in data["message"], data["message"]
    assert await rows(memory) == 0
    assert await indexed_ids(memory) == set()


async def test_arguments_may_arrive_as_json_text(memory: Memory) -> None:
    ok = json.loads(
        await memory.call_tool(
            "write_memory",
            '{"content": "x", "tags": "t", "importance": "low", "scope": "user"}',
            ALICE,
        )
    )
    assert ok["status"] == "success"
    bad = json.loads(await memory.call_tool("write_memory", '{"content": "x", ', ALICE))
    assert bad["status"] == "error" and "不是合法 JSON" in bad["message"]


async def test_another_embedding_model_is_refused_and_writes_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    async with open_memory(make_settings()) as mem:
        await write(mem, "第一个模型写的")
    async with open_memory(
        make_settings(
            **{
                "embedding.protocol": "hash",
                "embedding.hash_dim": 128,
                "embedding.mismatch_policy": "never",
            }
        )
    ) as mem:
        data = await call(
            mem, "write_memory", content="第二个模型", tags="t", importance="low", scope="user"
        )
        assert data["status"] == "error"
        assert data["message"].startswith("写入记忆失败: embedding model mismatch")
        assert await rows(mem) == 1
        await assert_index_in_step(mem)


# ---------------------------------------------------------------- the partition cap


async def test_concurrent_writers_never_exceed_the_cap(memory: Memory) -> None:
    """160 concurrent writers into one partition leave exactly 100 rows."""
    replies = await asyncio.gather(
        *(
            memory.call_tool(
                "write_memory",
                {"content": f"并发写入 {i}", "tags": "t", "importance": "low", "scope": "user"},
                ALICE,
            )
            for i in range(160)
        )
    )
    results = [json.loads(r) for r in replies]
    ok = [r for r in results if r["status"] == "success"]
    refused = [r for r in results if r["status"] == "error"]
    assert len(ok) == 100 and len(refused) == 60
    assert await memory.memories.count(ALICE.personal_key) == 100
    assert all(
        "上限（100 条）" in r["message"]
        and "update_memory" in r["message"]
        and "delete_memory" in r["message"]
        for r in refused
    )
    assert all(r["limit"] == 100 for r in refused)
    assert await assert_index_in_step(memory) == {r["memory_id"] for r in ok}
    # Other partitions are not affected by a full one.
    assert (
        await call(
            memory,
            "write_memory",
            ALICE_IN_GROUP,
            content="群里的",
            tags="t",
            importance="low",
            scope="group",
        )
    )["status"] == "success"


async def test_a_cap_of_zero_refuses_every_write(make_settings: Callable[..., Settings]) -> None:
    async with open_memory(make_settings(per_session_memory_limit=0)) as mem:
        data = await call(
            mem, "write_memory", content="x", tags="t", importance="low", scope="user"
        )
        assert data["status"] == "error" and "上限（0 条）" in data["message"]
        assert await rows(mem) == 0
        assert await indexed_ids(mem) == set()


async def test_schemas_are_openai_function_format(memory: Memory) -> None:
    schemas = {s["function"]["name"]: s for s in memory.tool_schemas()}
    assert {"write_memory", "read_memory", "update_memory", "delete_memory", "list_memory"} <= set(
        schemas
    )
    write_fn = schemas["write_memory"]["function"]
    assert schemas["write_memory"]["type"] == "function"
    assert write_fn["parameters"]["required"] == ["content", "tags", "importance", "scope"]
    assert write_fn["parameters"]["properties"]["importance"]["enum"] == ["low", "medium", "high"]
    read_fn = schemas["read_memory"]["function"]["parameters"]["properties"]
    assert read_fn["top_k"]["default"] == 5 and read_fn["top_k"]["maximum"] == 50
    assert read_fn["importance"]["enum"] == ["low", "medium", "high", None]
