"""The one place a ``/memory`` failure becomes a reply (the command's outer edge).

Each operation has the sentence it has always answered when something went wrong
(``{reason}``: the exception's text, or its class name when it has none), and the
project's errors it expects mapped to their own sentence (``{error}``: the error's text,
``{label}``: the scope). A use case's :class:`Refusal` reads as its own sentence, in
every operation. Any other error of the package's tree is answered with the
operation's sentence and logged as a warning; anything else is unexpected: logged with
its traceback, and answered the same way. Nothing is raised into the chat.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from amrita_memory_pg.commands.memory_command.base import Answer, Step
from amrita_memory_pg.domain.errors import (
    AmritaMemoryError,
    KnowledgeError,
    LeaseHeld,
    MemoryPaused,
    PartitionFull,
    ProfileRefused,
)
from amrita_memory_pg.usecases.values import Refusal

log = logging.getLogger("amrita_memory_pg.commands.memory_command")


@dataclass(frozen=True, slots=True)
class Failure:
    """How one operation's failure reads."""

    sentence: str
    expected: Mapping[type[AmritaMemoryError], str] = field(default_factory=dict)


FAILURES: dict[str, Failure] = {
    "memo": Failure("读取备忘录失败: {reason}"),
    "list": Failure("列出记忆失败: {reason}"),
    "search": Failure(
        "搜索记忆失败: {reason}",
        {
            MemoryPaused: "⏸ {label} 的记忆已暂停（超级用户可用 /memory resume 恢复），暂停期间不检索"
        },
    ),
    "delete": Failure("删除记忆失败: {reason}"),
    "add": Failure(
        "添加记忆失败: {reason}", {PartitionFull: "当前会话的记忆数量已超过限制，请清理后再试"}
    ),
    "clear": Failure("清空记忆失败: {reason}（没有删除任何内容，或请用 list 确认）"),
    "pause": Failure("操作失败: {reason}"),
    "forget": Failure(
        "忘记失败: {reason}（没有忘记任何内容）",
        {MemoryPaused: "⏸ {label} 的记忆已暂停，暂停期间不能在这里忘记（请用管理页面或命令行）"},
    ),
    "erase": Failure(
        "擦除失败: {reason}（没有擦除任何内容）",
        {LeaseHeld: "{error}：该分区的整理或提取正在运行，稍后再试（没有擦除任何内容）"},
    ),
    "extract": Failure("记忆提取失败: {reason}（原有自动记忆未改动）"),
    "profile": Failure("画像操作失败: {reason}", {ProfileRefused: "{error}"}),
    "knowledge": Failure("知识库操作失败: {reason}", {KnowledgeError: "❌ {error}"}),
    "dmn": Failure("潜意识调度未启动：触发失败（{reason}），检查日志"),
    "cycle": Failure("潜意识整理失败：{reason}，检查日志"),
}


def reason(exc: BaseException) -> str:
    """An exception as one short phrase (some, like NotImplementedError(), have no text)."""
    return str(exc) or type(exc).__name__


async def perform(step: Step) -> Answer:
    """Run ``step``; a failure becomes its operation's sentence. Never raises an Exception."""
    failure = FAILURES[step.operation]
    try:
        return await step.perform()
    except Refusal as exc:  # what to do is its text
        return str(exc)
    except AmritaMemoryError as exc:
        for kind, sentence in failure.expected.items():
            if isinstance(exc, kind):
                return sentence.format(error=exc, label=step.label)
        log.warning("/memory %s on %s failed: %s", step.operation, step.what, reason(exc))
        return failure.sentence.format(reason=reason(exc))
    except Exception as exc:  # the command's outer edge: reply, never raise into the chat
        log.exception("/memory %s on %s failed", step.operation, step.what)
        return failure.sentence.format(reason=reason(exc))
