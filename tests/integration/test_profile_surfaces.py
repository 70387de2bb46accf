"""The operator's and the chat user's ways to a profile: ``amrita-memory profile …`` and
``amrita-memory status``, and ``/memory profile`` with its permission rules."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from amrita_memory_pg.commands.memory_command import (
    MemoReply,
    MemoryCommand,
    TextReply,
    parse_command,
)
from amrita_memory_pg.domain.profile import ProfileActor, make_edit
from amrita_memory_pg.memory import Memory
from amrita_memory_pg.tools.context import ToolContext
from tests.support.cli import run_cli
from tests.support.memory import memory_on

ALICE_KEY = "QQPlatform_Private_10001"
BOB_KEY = "QQPlatform_Private_20002"
LOOP = ProfileActor("loop", cycle_id=41)
ALICE = ToolContext(platform="qq", user_id="10001", group_id="555")
BOB = ToolContext(platform="qq", user_id="20002")
ROOT = ToolContext(platform="qq", user_id="99999", roles=frozenset({"superuser"}))
ADMIN = ToolContext(platform="qq", user_id="30003", group_id="555", roles=frozenset({"admin"}))


async def seed(mem: Memory) -> None:
    await mem.profiles.edit(
        ALICE_KEY, make_edit("爱猫的学生", "养了一只橘猫\n住在杭州", None, None), LOOP
    )
    await mem.profiles.edit(
        ALICE_KEY, make_edit("胡说", "全错了", 0, 2), ProfileActor("loop", cycle_id=42)
    )


async def test_cli_profile_show_history_revert_and_status(db_dsn: str, tmp_path: Path) -> None:
    async with memory_on(db_dsn, tmp_path) as mem:
        await seed(mem)
    env = {"DATABASE_URL": db_dsn, "EMBEDDING_PROCTOL": "hash"}

    show = run_cli("profile", "show", "10001", env=env)
    assert show.returncode == 0, show.stderr
    assert show.stdout.splitlines() == [f"{ALICE_KEY}  v2  lines: 1", "summary: 胡说", "0: 全错了"]

    history = run_cli("profile", "history", ALICE_KEY, env=env)
    assert history.returncode == 0, history.stderr
    lines = history.stdout.splitlines()
    assert lines[0] == f"{ALICE_KEY}: 2 changes (the newest 20 are kept)"
    assert (
        "v2  " in lines[1]
        and "L3 loop (cycle 42)  replace [0:2] -> [0:1]  lines 2 -> 1" in lines[1]
    )
    assert "(summary changed)" in lines[1]
    assert "L3 loop (cycle 41)  append 2 lines at 0  lines 0 -> 2" in lines[2]

    one = run_cli("profile", "history", "10001", "--version", "2", env=env)
    assert (
        "--- before  summary: 爱猫的学生\n0: 养了一只橘猫\n1: 住在杭州\n--- after  summary: 胡说\n0: 全错了"
        in one.stdout
    )

    refused = run_cli("profile", "revert", "10001", "1", env=env, input="n\n")
    assert refused.returncode == 1 and "Aborted" in refused.stderr
    reverted = run_cli("profile", "revert", "10001", "1", "--yes", env=env)
    assert reverted.returncode == 0, reverted.stderr
    assert f"restored {ALICE_KEY}'s profile to v1 (new version v3, 2 lines)" in reverted.stdout
    show = run_cli("profile", "show", ALICE_KEY, env=env)
    assert show.stdout.splitlines()[1:] == ["summary: 爱猫的学生", "0: 养了一只橘猫", "1: 住在杭州"]
    newest = run_cli("profile", "history", "10001", "--limit", "1", env=env).stdout.splitlines()
    assert "revert to v1" in newest[1] and "command line / page (" in newest[1]

    gone = run_cli("profile", "revert", "10001", "7", "--yes", env=env)
    assert gone.returncode == 2 and "没有 v7" in gone.stderr and "Traceback" not in gone.stderr
    group = run_cli("profile", "show", "QQPlatform_Group_555", env=env)
    assert group.returncode == 2 and "groups have no profile" in group.stderr
    nobody = run_cli("profile", "show", "20002", env=env)
    assert nobody.stdout.strip() == f"{BOB_KEY}: no profile"

    status = run_cli("status", env=env)
    assert "profiles:    1 (3 changes kept)" in status.stdout, status.stdout

    # the reference plugin's file, as its B2 bug left it
    reference = tmp_path / "user_profile.md"
    reference.write_text("爱狗\n---\n\n养了一只柴犬\n住在上海\n", encoding="utf-8")
    imported = run_cli("profile", "import", "20002", str(reference), env=env)
    assert imported.returncode == 0, imported.stderr
    assert f"imported user_profile.md into {BOB_KEY} (v1, 2 lines)" in imported.stdout
    shown = run_cli("profile", "show", "20002", env=env).stdout.splitlines()
    assert shown[1:] == ["summary: 爱狗", "0: 养了一只柴犬", "1: 住在上海"]
    again = run_cli("profile", "import", "10001", str(reference), env=env, input="n\n")
    assert again.returncode == 1 and "has a profile" in again.stdout
    reference.write_text("S\n---\n" + "\n".join(["x"] * 201), encoding="utf-8")
    too_many = run_cli("profile", "import", "30003", str(reference), env=env)
    assert too_many.returncode == 2 and "行数过多（201 行，上限 200）" in too_many.stderr


@pytest.fixture
async def command(db_dsn: str, tmp_path: Path) -> AsyncIterator[MemoryCommand]:
    async with memory_on(db_dsn, tmp_path) as mem:
        await seed(mem)
        yield MemoryCommand.over(mem)


def text(reply: object) -> str:
    if isinstance(reply, MemoReply):
        return "\n".join(reply.chunks)
    assert isinstance(reply, TextReply)
    return reply.text


def test_the_parser_knows_profile() -> None:
    assert parse_command("profile history 1", in_group=False).kind == "profile"
    assert parse_command("画像", in_group=True).args == ""
    assert parse_command("PROFILE revert 10001 2", in_group=False).args == "revert 10001 2"


async def test_memory_profile_shows_ones_own_in_any_chat(command: MemoryCommand) -> None:
    mine = await command.run(ALICE, "profile")
    assert isinstance(mine, MemoReply) and mine.title == "用户画像"
    assert text(mine) == "👤 你的用户画像（v2，1 行）\n摘要: 胡说\n0: 全错了"
    assert text(await command.run(ALICE, "profile show 10001")) == text(mine)
    assert text(await command.run(BOB, "profile")) == "你还没有用户画像"
    history = text(await command.run(ALICE, "profile history"))
    assert history.startswith("📜 你的画像修改历史（最近 2 次）:")
    assert "loop (cycle 42)" in history


async def test_another_users_profile_is_for_superusers_only(command: MemoryCommand) -> None:
    refusal = "❌ 只能查看自己的画像（超级用户可查看他人的画像）"
    for ctx in (BOB, ADMIN):
        # the same answer whether the profile exists (Alice) or not (a stranger)
        for who in ("10001", ALICE_KEY, "77777", "QQPlatform_Group_555"):
            assert text(await command.run(ctx, f"profile show {who}")) == refusal
            assert text(await command.run(ctx, f"profile history {who}")) == refusal
    root = text(await command.run(ROOT, "profile show 10001"))
    assert root.startswith(f"👤 {ALICE_KEY}的用户画像（v2，1 行）")
    assert "全错了" in text(await command.run(ROOT, f"profile show {ALICE_KEY}"))
    assert "cycle 41" in text(await command.run(ROOT, "profile history 10001"))
    assert "不是用户" in text(await command.run(ROOT, "profile show QQPlatform_Group_555"))


async def test_revert_is_for_superusers_and_is_recorded(command: MemoryCommand) -> None:
    assert command.cases.profiles is not None
    for ctx in (ALICE, ADMIN, BOB):
        assert text(await command.run(ctx, "profile revert 10001 1")) == "❌ 仅超级用户可以回滚画像"
        assert text(await command.run(ctx, "profile revert 1")) == "❌ 仅超级用户可以回滚画像"
    assert (await command.cases.profiles.get(ALICE_KEY)).version == 2
    done = text(await command.run(ROOT, "profile revert 10001 1"))
    assert done == f"✅ 已把 {ALICE_KEY} 的画像恢复到 v1 的内容（新版本 v3）"
    newest = (await command.cases.profiles.history(ALICE_KEY, 1))[0]
    assert (newest.actor_kind, newest.actor, newest.operation) == ("chat", "99999", "revert to v1")
    assert "没有 v9" in text(await command.run(ROOT, "profile revert 10001 9"))
    assert "版本号应为非负整数" in text(await command.run(ROOT, "profile revert 10001 x"))
    # a superuser's own profile: «revert <version>»
    assert "没有 v1" in text(await command.run(ROOT, "profile revert 1"))


async def test_bad_profile_arguments_get_a_sentence(command: MemoryCommand) -> None:
    assert "NUL" in text(await command.run(ROOT, "profile show 1\x002"))
    assert text(await command.run(ALICE, "profile frobnicate")).startswith("用法:")
    assert text(await command.run(ALICE, "profile show a b")).startswith("用法:")
    assert "过长" in text(await command.run(ROOT, "profile show " + "9" * 500))
