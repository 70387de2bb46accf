"""The second seed's memory model on the chat surface: manual entries
protected from the chat tools (and by the database), the global scope's rights, loading
another scope, the budgeted "## Bot Memories" block in one query, ``/memory`` with
categories and importance, and ``clear`` that asks first and takes a backup."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply
from amrita_memory_pg.domain.errors import ProtectedMemory
from amrita_memory_pg.maintenance.backup import list_backups
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.storage.queries import query
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on

ALICE = ToolContext(platform="qq", user_id="10001")
ALICE_IN_GROUP = ToolContext(platform="qq", user_id="10001", group_id="30003")
BOB = ToolContext(platform="qq", user_id="10002")
ROOT = ToolContext(platform="qq", user_id="99999", roles=frozenset({"superuser"}))
GROUP_ADMIN = ToolContext(
    platform="qq", user_id="10003", group_id="30003", roles=frozenset({"admin"})
)


@pytest.fixture
async def mem(db_dsn: str, tmp_path: Path) -> AsyncIterator[Memory]:
    async with memory_on(db_dsn, tmp_path) as opened:
        yield opened


async def call(mem: Memory, tool: str, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(await mem.call_tool(tool, args, ctx))
    return reply


async def table(mem: Memory) -> list[tuple[Any, ...]]:
    rows = await mem.pool.fetch(
        "SELECT partition_key, id, content, importance, category, source, updated_at "
        "FROM amrita_memory.memory ORDER BY partition_key, id"
    )
    return [tuple(r) for r in rows]


def command(mem: Memory) -> MemoryCommand:
    return MemoryCommand.over(mem)


async def run(mem: Memory, ctx: ToolContext, text: str) -> str:
    reply = await command(mem).run(ctx, text)
    assert isinstance(reply, TextReply)
    return reply.text


# ---------------------------------------------------------------- manual entries


async def test_manual_entries_are_refused_to_the_chat_tools_and_stay(mem: Memory) -> None:
    added = await run(mem, ALICE, "user add -c rule -i 9 部署前必须先跑测试")
    assert "手动条目" in added
    (record,) = (await mem.memories.list_page(ALICE.personal_key, limit=5))[0]
    assert (record.source, record.category, record.importance) == ("user", "rule", 9)
    before = await table(mem)

    update = await call(
        mem, "update_memory", {"id": record.id, "content": "不用跑测试", "scope": "user"}, ALICE
    )
    delete = await call(mem, "delete_memory", {"id": record.id, "scope": "user"}, ALICE)

    for reply in (update, delete):
        assert reply["status"] == "error" and reply["source"] == "user"
        assert "手动添加" in reply["message"] and "/memory" in reply["message"]
    assert await table(mem) == before
    # the person who added it may still delete it
    assert "已删除" in await run(mem, ALICE, f"user delete {record.id}")


async def test_the_database_refuses_automatic_changes_to_manual_entries(mem: Memory) -> None:
    """The guard holds below the tools too: every automatic caller of the service."""
    record = await mem.memories.add(
        partition_key=ALICE.personal_key, scope="user", content="手动的", source="user"
    )
    with pytest.raises(ProtectedMemory):
        await mem.memories.update(ALICE.personal_key, record.id, importance=2)
    with pytest.raises(ProtectedMemory):
        await mem.memories.delete(ALICE.personal_key, record.id)
    with pytest.raises(asyncpg.PostgresError) as raised:
        await mem.pool.fetchval(query("delete_memory_guarded"), ALICE.personal_key, record.id, True)
    assert raised.value.sqlstate == "AMP01"
    assert (await mem.memories.get(ALICE.personal_key, record.id)) == record
    changed = await mem.memories.update(ALICE.personal_key, record.id, importance=2, by_person=True)
    assert changed is not None and changed.importance == 2


async def test_protection_can_be_turned_off(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path, protect_manual_memories=False) as mem:
        record = await mem.memories.add(
            partition_key=ALICE.personal_key, scope="user", content="手动的", source="user"
        )
        reply = await call(mem, "delete_memory", {"id": record.id, "scope": "user"}, ALICE)
        assert reply["status"] == "success"


# ---------------------------------------------------------------- global scope


async def test_only_superusers_write_global_memories_and_everyone_reads_them(mem: Memory) -> None:
    write = {"content": "机器人名叫小安", "tags": "bot", "importance": "high", "scope": "global"}
    before = await table(mem)
    for ctx in (ALICE, ALICE_IN_GROUP, GROUP_ADMIN):
        refused = await call(mem, "write_memory", write, ctx)
        assert refused["status"] == "error" and "全局" in refused["message"]
        assert "超级用户" in refused["message"]
    assert await table(mem) == before

    written = await call(mem, "write_memory", write, ROOT)
    assert written["status"] == "success" and written["scope"] == "global"
    found = await call(mem, "read_memory", {"query": "机器人名叫小安", "scope": "global"}, BOB)
    assert found["status"] == "success" and found["documents"] == [["机器人名叫小安"]]
    listed = await call(mem, "list_memory", {"scope": "global"}, BOB)
    assert listed["total"] == 1 and listed["memories"][0]["source"] == "auto"
    refused = await call(mem, "delete_memory", {"id": written["memory_id"], "scope": "global"}, BOB)
    assert refused["status"] == "error" and "全局" in refused["message"]
    assert "只有超级用户" in await run(mem, ALICE, "global add 不应写入")
    assert "已添加 🌐全局 记忆" in await run(
        mem, ROOT, "global add -c knowledge 项目使用 PostgreSQL"
    )


# ---------------------------------------------------------------- categories on the surfaces


async def test_category_filters_on_list_and_search_in_tools_and_command(mem: Memory) -> None:
    for args in (
        "-c preference 喜欢猫",
        "--category=rule 周五不发版",
        "类别=规则 -i 8 先跑测试",
        "没有类别的事",
    ):
        assert "✅" in await run(mem, ALICE, f"user add {args}")
    listed = await call(mem, "list_memory", {"scope": "user", "category": "rule"}, ALICE)
    assert {m["content_preview"] for m in listed["memories"]} == {"周五不发版", "先跑测试"}
    assert {m["category"] for m in listed["memories"]} == {"rule"} and listed["total"] == 2
    found = await call(
        mem,
        "read_memory",
        {"query": "喜欢猫", "scope": "user", "category": "rule", "top_k": 5},
        ALICE,
    )
    assert set(found["documents"][0]) == {"周五不发版", "先跑测试"}
    assert {m["category"] for m in found["metadatas"][0]} == {"rule"}

    text = await run(mem, ALICE, "user list -c rule")
    assert "共 2 条，筛选 -c rule" in text and "学到的规则 | 重要度 8 | 手动" in text
    assert "喜欢猫" not in text
    assert "共 1 条" in await run(mem, ALICE, "user list -i 8")
    searched = await run(mem, ALICE, "user search -c preference 猫")
    assert "喜欢猫" in searched and "周五不发版" not in searched
    assert "不是已知的类别" in await run(mem, ALICE, "user add -c mood 开心")
    assert "重要度应在 1–10 之间" in await run(mem, ALICE, "user add -i 11 太重要")


# ---------------------------------------------------------------- loading another scope


async def test_loading_a_foreign_group_is_refused_and_a_member_may_load_it(mem: Memory) -> None:
    group_key = ALICE_IN_GROUP.group_key
    assert group_key is not None
    await mem.memories.add(
        partition_key=group_key, scope="group", content="群规：周五不发版", importance=9
    )
    refused = await call(mem, "memory_load_context", {"scope": "group:30003"}, BOB)
    assert refused["status"] == "error" and "无权装载群 30003" in refused["message"]
    assert await mem.bot_memories.loaded(BOB.session_key) == []
    assert await mem.memory_block(BOB) == ""

    # Alice has spoken in the group (the default membership check is the chat log)
    await mem.activity.record_user_message(
        session_key=group_key,
        user_key=ALICE.personal_key,
        user_id="10001",
        group_id="30003",
        text="hi",
    )
    loaded = await call(mem, "memory_load_context", {"scope": "group:30003"}, ALICE)
    assert loaded["status"] == "success" and loaded["memories"][0]["content"] == "群规：周五不发版"
    block = await mem.memory_block(ALICE)
    assert "## Bot Memories" in block and "群规：周五不发版" in block
    assert f"已装载的其他作用域（只读，memory_unload_context 可卸载）：{group_key}" in block

    # an adapter's platform check replaces the chat-log one
    async def nobody(platform: str, user_id: str, group_id: str) -> bool:
        return False

    mem.bot_memories.membership.check = nobody
    assert (await call(mem, "memory_load_context", {"scope": "group:30003"}, ALICE))[
        "status"
    ] == "error"
    assert (await call(mem, "memory_load_context", {"scope": "group:30003"}, ROOT))[
        "status"
    ] == "success"
    assert (await call(mem, "memory_unload_context", {"scope": "group:30003"}, ALICE))[
        "status"
    ] == "success"
    assert await mem.memory_block(ALICE) == ""
    again = await call(mem, "memory_unload_context", {"scope": "group:30003"}, ALICE)
    assert again["status"] == "error" and "没有装载" in again["message"]


async def test_loaded_scopes_expire_with_their_session(mem: Memory) -> None:
    now = datetime.now(UTC)
    await mem.bot_memories.load(
        ALICE.session_key, "global_other", "10001", now - timedelta(hours=2)
    )
    await mem.bot_memories.load(BOB.session_key, "global_other", "10002", now)
    await mem.extractor.run_expired(now=now)
    assert await mem.bot_memories.loaded(ALICE.session_key) == []
    assert await mem.bot_memories.loaded(BOB.session_key) == ["global_other"]


# ---------------------------------------------------------------- the injected block


class CountingPool:
    """Forwards to the real pool and counts the statements sent through it."""

    def __init__(self, pool: Any, counter: list[str]) -> None:
        self._pool = pool
        self._counter = counter

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._pool, name)
        if name in ("fetch", "fetchrow", "fetchval", "execute", "executemany"):

            async def counted(sql: str, *args: Any, **kwargs: Any) -> Any:
                self._counter.append(sql)
                return await target(sql, *args, **kwargs)

            return counted
        return target


async def test_the_block_orders_by_importance_then_recency_within_budget_in_one_query(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(
        db_dsn, tmp_path, injection__enabled=True, injection__inject_token_budget=60
    ) as mem:
        now = datetime.now(UTC)
        key = ALICE.personal_key
        await mem.memos.replace(key, "Alice 是学生")
        await mem.memories.add(
            partition_key="global",
            scope="global",
            content="机器人名叫小安",
            importance=8,
            category="knowledge",
            now=now - timedelta(days=1),
        )
        await mem.memories.add(
            partition_key=key,
            scope="user",
            content="喜欢猫",
            importance=8,
            category="preference",
            now=now,
        )
        await mem.memories.add(
            partition_key=key, scope="user", content="住在杭州", importance=5, now=now
        )
        # old and unimportant: the lowest recency-decay score, the one the budget evicts
        await mem.memories.add(
            partition_key=key,
            scope="user",
            content="三年前提过一次的小事" * 3,
            importance=2,
            now=now - timedelta(days=900),
        )
        await mem.memories.add(
            partition_key=BOB.personal_key, scope="user", content="Bob 的秘密", importance=10
        )

        statements: list[str] = []
        for holder in (mem.bot_memories.repo, mem.memos):
            holder._pool = CountingPool(holder._pool, statements)  # type: ignore[attr-defined]
        mem.memories.repo.pool = CountingPool(mem.memories.repo.pool, statements)  # type: ignore[assignment]
        block = await mem.memory_block(ALICE)

        assert len(statements) == 1
        memo, memories = block.split("\n\n")
        assert "Alice 是学生" in memo
        lines = memories.split("\n")
        assert lines[:2] == ["## Bot Memories", lines[1]]
        assert lines[2:] == [
            "- [个人][用户偏好][8] 喜欢猫",
            "- [全局][知识库][8] 机器人名叫小安",
            "- [个人][5] 住在杭州",
        ]
        assert "Bob" not in block  # another user's partition never leaks

        # a bigger budget takes the old one too, still in importance order
        wide = mem.settings.model_copy(
            update={
                "injection": mem.settings.injection.model_copy(update={"inject_token_budget": 500})
            }
        )
        mem.bot_memories.settings = wide
        assert (await mem.memory_block(ALICE)).endswith("[2] " + "三年前提过一次的小事" * 3)


async def test_relevant_memories_join_the_block_when_asked(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(
        db_dsn,
        tmp_path,
        injection__enabled=True,
        injection__relevant_top_k=1,
        injection__inject_token_budget=200,
    ) as mem:
        key = ALICE.personal_key
        await mem.memories.add(partition_key=key, scope="user", content="喜欢猫", importance=3)
        await mem.memories.add(
            partition_key=key, scope="user", content="在学 Rust 编程", importance=3
        )
        block = await mem.memory_block(ALICE, "在学 Rust 编程")
        assert "### 与当前消息相关\n- [个人][3] 在学 Rust 编程" in block
        assert block.count("在学 Rust 编程") == 1


async def test_injection_off_keeps_the_memo_block_exactly(mem: Memory) -> None:
    await mem.memos.replace(ALICE.personal_key, "Alice 是学生")
    await mem.memories.add(partition_key=ALICE.personal_key, scope="user", content="喜欢猫")
    block = await mem.memory_block(ALICE)
    assert "Alice 是学生" in block and "Bot Memories" not in block and "喜欢猫" not in block


# ---------------------------------------------------------------- clear


async def test_clear_asks_first_then_takes_a_backup_and_names_it(mem: Memory) -> None:
    for n in range(3):
        await run(mem, ALICE, f"user add 记忆{n}")
    await mem.memories.add(partition_key=BOB.personal_key, scope="user", content="Bob 的")
    asked = await run(mem, ALICE, "user clear")
    assert "将清空 👤个人 的全部 3 条记忆" in asked and list_backups(mem.store.backups_dir) == []
    token = asked.rsplit(" ", 1)[1]
    assert await mem.memories.count(ALICE.personal_key) == 3

    assert "确认码不匹配" in await run(mem, ALICE, "user clear 00000000")
    assert await mem.memories.count(ALICE.personal_key) == 3
    done = await run(mem, ALICE, f"user clear {token}")
    (backup,) = list_backups(mem.store.backups_dir)
    assert f"已清空 👤个人 的 3 条记忆。清空前的备份: {backup.stem}" in done
    # the restore hint works wherever it is pasted: the whole path
    hint = done.split("恢复: ", 1)[1].rstrip("）")
    assert hint == f"amrita-memory backup restore {backup.jsonl_path.resolve()}"
    assert Path(hint.rsplit(" ", 1)[1]).is_absolute()
    assert backup.counts["memory"] == 4  # the backup holds what was cleared
    assert await mem.memories.count(ALICE.personal_key) == 0
    assert await mem.memories.count(BOB.personal_key) == 1


async def test_a_token_stops_matching_once_the_scope_changed(mem: Memory) -> None:
    await run(mem, ALICE, "user add 记忆")
    token = (await run(mem, ALICE, "user clear")).rsplit(" ", 1)[1]
    await run(mem, ALICE, "user add 又一条")
    assert "确认码不匹配" in await run(mem, ALICE, f"user clear {token}")
    assert await mem.memories.count(ALICE.personal_key) == 2


async def test_group_clear_is_for_admins(mem: Memory) -> None:
    await run(mem, GROUP_ADMIN, "group add 群记忆")
    assert "仅管理员和群主可清空" in await run(mem, ALICE_IN_GROUP, "group clear")
    asked = await run(mem, GROUP_ADMIN, "group clear")
    assert "将清空 👥群共享 的全部 1 条记忆" in asked
