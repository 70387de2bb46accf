"""``/memory knowledge …``: the chat tools' permission rules, grant/revoke for superusers."""

from __future__ import annotations

from pathlib import Path

from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply, parse_command
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.services.knowledge import NO_PERMISSION
from amrita_memory_pg.tools.context import ToolContext
from tests.support.memory import memory_on


def who(user: str, *, group: str | None = None, roles: set[str] | None = None) -> ToolContext:
    return ToolContext(platform="qq", user_id=user, group_id=group, roles=frozenset(roles or ()))


async def run(mem: Memory, ctx: ToolContext, text: str) -> str:
    command = MemoryCommand.over(mem)
    reply = await command.run(ctx, text)
    assert isinstance(reply, TextReply)
    return reply.text


def test_the_parser_knows_the_knowledge_sub() -> None:
    parsed = parse_command("knowledge read 0a1b2c3d 1 5", in_group=False)
    assert (parsed.kind, parsed.action, parsed.args) == ("knowledge", "read", "0a1b2c3d 1 5")
    assert parse_command("知识库 LIST", in_group=True).action == "list"


async def test_memory_knowledge_commands(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        kid = (
            await mem.knowledge.create(
                title="猫的饮食",
                summary="猫不能吃巧克力",
                body="\n".join(f"第{i}行" for i in range(50)),
            )
        ).kid
        root = who("1", roles={"superuser"})
        plain = who("2")
        admin = who("3", group="9", roles={"admin"})

        # refused readers get the tools' sentence: no title, no count, for any kid
        for ctx in (plain, admin):
            for text in ("knowledge list", f"knowledge read {kid}", "knowledge search 猫"):
                assert await run(mem, ctx, text) == NO_PERMISSION
        # grant/revoke are for superusers only
        refused = await run(mem, admin, "knowledge grant 2")
        assert refused.startswith("❌ 仅超级用户")
        assert not await mem.knowledge.grants()
        assert await run(mem, root, "knowledge grant 2") == "✅ 已授予 2 memory.knowledge"

        listed = await run(mem, plain, "knowledge list")
        assert f"[{kid}] 猫的饮食 — 猫不能吃巧克力（50 行）" in listed
        page = await run(mem, plain, f"knowledge read {kid}")
        assert "第 0–40 行 / 共 50 行" in page and "39: 第39行" in page and "40: " not in page
        assert f"下一段: /memory knowledge read {kid} 40 80" in page
        window = await run(mem, plain, f"knowledge read {kid} 48 99")
        assert window.endswith("48: 第48行\n49: 第49行")
        found = await run(mem, plain, "knowledge search 猫不能吃巧克力")
        assert f"[{kid}] 猫的饮食" in found and "距离: 0.0000" in found

        # bad input: a clear line, nothing read or written
        assert (await run(mem, plain, "knowledge read ffffffff")) == (
            "❌ Knowledge not found: ffffffff"
        )
        assert "超出范围" in await run(mem, plain, f"knowledge read {kid} 51")
        assert "行号应为非负整数" in await run(mem, plain, f"knowledge read {kid} -1")
        assert "用法" in await run(mem, plain, "knowledge frobnicate")

        # anyone suggests
        done = await run(mem, who("5"), "knowledge suggest 新条目 | 一段摘要 | 正文 | 常被问到")
        assert done.startswith("✅ 知识建议 #") and "待处理 1 条" in done
        # L3 is off here: no promise of a review by the loop
        assert "等待管理员审查" in done and "后台记忆管家将在" not in done
        assert "用法" in await run(mem, who("5"), "knowledge suggest 只有标题")
        assert (await mem.knowledge.pending_suggestions())[0] == 1

        assert await run(mem, root, "knowledge revoke 2") == "✅ 已撤销 2 memory.knowledge"
        assert await run(mem, plain, "knowledge list") == NO_PERMISSION


async def test_the_usage_names_every_command_a_caller_may_run(db_dsn: str, tmp_path: Path) -> None:
    """The help used to omit the knowledge, pause/resume, dmn and profile
    show/revert commands; a superuser sees the ones only they may run."""
    from amrita_memory_pg.commands.memory_command import (
        USAGE_DMN,
        USAGE_KNOWLEDGE,
        USAGE_PAUSE,
        USAGE_PROFILE_ADMIN,
    )

    async with memory_on(db_dsn, tmp_path) as mem:
        plain = await run(mem, who("2"), "help")
        root = await run(mem, who("1", roles={"superuser"}), "help")
        lp_admin = await run(mem, who("3", group="9", roles={"lp.admin"}), "help")
    for line in USAGE_KNOWLEDGE:
        assert line in plain and line in root
    for line in (USAGE_PAUSE, USAGE_DMN, USAGE_PROFILE_ADMIN):
        assert line not in plain
        assert line in root and line in lp_admin
    assert "/memory pause|resume" in root and "/memory dmn" in root and "revert" in root
