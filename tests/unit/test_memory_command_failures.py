"""``/memory``'s one failure edge (commands/memory_command/failures.py), without a bot or
a database: each operation answers the sentence it always has, an expected error of the
package its own sentence, and only a truly unexpected error is logged with a traceback."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from amrita_memory_pg.commands.memory_command.base import Step
from amrita_memory_pg.commands.memory_command.failures import FAILURES, perform
from amrita_memory_pg.domain.errors import (
    DatabaseRefused,
    KnowledgeNotFound,
    MemoryPaused,
    PartitionFull,
    ProfileRefused,
)

PACKAGE = Path(__file__).resolve().parents[2] / "amrita_memory_pg" / "commands" / "memory_command"


def _failing(operation: str, exc: BaseException, label: str = "") -> Step:
    async def run() -> str:
        raise exc

    return Step(operation, "QQPlatform_Private_1", run, label=label)


@pytest.mark.parametrize(
    ("operation", "exc", "reply"),
    [
        ("memo", RuntimeError("boom"), "读取备忘录失败: boom"),
        ("list", NotImplementedError(), "列出记忆失败: NotImplementedError"),
        ("search", RuntimeError("x"), "搜索记忆失败: x"),
        ("delete", RuntimeError("x"), "删除记忆失败: x"),
        ("add", RuntimeError("x"), "添加记忆失败: x"),
        ("clear", RuntimeError("x"), "清空记忆失败: x（没有删除任何内容，或请用 list 确认）"),
        ("pause", RuntimeError("x"), "操作失败: x"),
        ("extract", RuntimeError("x"), "记忆提取失败: x（原有自动记忆未改动）"),
        ("profile", RuntimeError("x"), "画像操作失败: x"),
        ("knowledge", RuntimeError("x"), "知识库操作失败: x"),
        ("dmn", RuntimeError("x"), "潜意识调度未启动：触发失败（x），检查日志"),
        ("cycle", RuntimeError("x"), "潜意识整理失败：x，检查日志"),
    ],
)
async def test_an_unexpected_error_gets_the_operations_sentence_and_a_traceback(
    operation: str, exc: Exception, reply: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        assert await perform(_failing(operation, exc)) == reply
    assert [r.exc_info is not None for r in caplog.records] == [True]
    assert operation in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    ("operation", "exc", "reply"),
    [
        (
            "search",
            MemoryPaused("QQPlatform_Private_1"),
            "⏸ 👤个人 的记忆已暂停（超级用户可用 /memory resume 恢复），暂停期间不检索",
        ),
        (
            "add",
            PartitionFull("QQPlatform_Private_1", 100),
            "当前会话的记忆数量已超过限制，请清理后再试",
        ),
        ("profile", ProfileRefused("第 9 行不存在（共 3 行）"), "第 9 行不存在（共 3 行）"),
        ("knowledge", KnowledgeNotFound("ffffffff"), "❌ Knowledge not found: ffffffff"),
    ],
)
async def test_an_expected_error_gets_its_own_sentence_and_no_log(
    operation: str, exc: Exception, reply: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        assert await perform(_failing(operation, exc, label="👤个人")) == reply
    assert caplog.records == []


async def test_an_expected_error_elsewhere_reads_as_that_operations_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """MemoryPaused is the search's own sentence only; elsewhere (and any other error of
    the package) it is the operation's failure, logged as a warning without a traceback."""
    with caplog.at_level(logging.DEBUG):
        paused = MemoryPaused("QQPlatform_Private_1")
        assert await perform(_failing("list", paused)) == f"列出记忆失败: {paused}"
        refused = DatabaseRefused("statement timeout", reason="timeout")
        assert await perform(_failing("delete", refused)) == "删除记忆失败: statement timeout"
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.WARNING, None)] * 2


def test_every_step_a_handler_makes_has_a_failure_sentence() -> None:
    """A Step whose operation had no entry would raise KeyError into the chat."""
    operations = set()
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Step":
                first = node.args[0]
                assert isinstance(first, ast.Constant), (path.name, ast.unparse(node))
                operations.add(first.value)
    assert operations == set(FAILURES)


def test_an_empty_memo_says_what_a_memo_is_and_how_one_is_written() -> None:
    from amrita_memory_pg.commands.memory_command.memo import EMPTY_MEMO

    assert EMPTY_MEMO.startswith("当前作用域还没有备忘录")
    for needed in ("每轮对话", "update_memo", "管理页面", "/memory user add"):
        assert needed in EMPTY_MEMO
