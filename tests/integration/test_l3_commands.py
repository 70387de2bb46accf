"""One cycle on demand: ``amrita-memory consolidate`` (a subprocess, as an operator runs it)
and ``/memory dmn`` (the command parser shared by the adapters), against ScriptedLLM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from amrita_memory_pg.commands.memory_command import MemoryCommand, TextReply
from amrita_memory_pg.testing_llm import ScriptedLLM
from amrita_memory_pg.tools.context import ToolContext
from tests.support.cli import run_cli
from tests.support.l3 import TARGET, USAGE, add, loop_memory


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as stub:
        stub.usage = USAGE
        yield stub


async def test_consolidate_dry_run_prints_the_summary_and_writes_no_memory(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    llm.call("subconscious_write_memory", {"content": "演练", "tags": "x", "importance": "low"})
    llm.call("subconscious_iter_stop", {"summary": "试写一条"})
    env = {
        "DATABASE_URL": db_dsn,
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
        "AMRITA_MEMORY_SUBCONSCIOUS__PROMPT_DIR": str(tmp_path / "config"),
        "LLM_BASE_URL": llm.base_url,
        "LLM_MODEL": "stub",
    }
    done = run_cli("consolidate", "--target", TARGET, "--dry-run", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"cycle 1 of {TARGET}: ok [dry run: nothing written]")
    assert "iterations 2, tool calls 3, memories changed 1, tokens 200 prompt / 20 completion" in (
        done.stdout
    )
    assert "summary: 试写一条" in done.stdout
    conn = await asyncpg.connect(db_dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM amrita_memory.memory") == 0
        row = await conn.fetchrow(
            "SELECT trigger, dry_run, ok FROM amrita_memory.consolidation_cycle"
        )
    finally:
        await conn.close()
    assert row is not None and tuple(row) == ("cli", True, True)
    # a failed cycle exits 1 (the script is used up: the model answers without tools)
    failed = run_cli("consolidate", "--target", TARGET, env=env)
    assert failed.returncode == 1 and "failed (the model stopped" in failed.stdout


async def test_memory_dmn_runs_a_cycle_for_the_configured_target_and_reports_it(
    db_dsn: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    async with loop_memory(db_dsn, tmp_path, llm) as mem:
        first = await add(mem, "用户喜欢猫")
        second = await add(mem, "用户喜欢猫")
        llm.call("subconscious_delete_memory", {"id": second})
        llm.call("subconscious_iter_stop", {"summary": "删了一条重复"})
        command = MemoryCommand.over(mem, cycle_run=mem.run_cycle)
        admin = ToolContext(platform="qq", user_id="1", roles=frozenset({"superuser"}))
        member = ToolContext(platform="qq", user_id="2")
        refused = await command.run(member, "dmn")
        assert isinstance(refused, TextReply) and refused.text == "未知选项：dmn"
        reply = await command.run(admin, "dmn")
        assert isinstance(reply, TextReply)
        assert reply.text.splitlines() == [
            "✅ 潜意识整理完成",
            "轮次 2，工具调用 3，改动记忆 1 条",
            "tokens：提示 200 / 生成 20",
            "总结：删了一条重复",
        ]
        assert await mem.memories.get(TARGET, first) is not None
        assert await mem.memories.get(TARGET, second) is None
