"""What the L3 loop's tool modules share: the cycle of a call, the argument types."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator

from amrita_memory_pg.domain.consolidation import CycleContext
from amrita_memory_pg.domain.errors import MemoryPaused, ToolError
from amrita_memory_pg.domain.importance import ImportanceLabel
from amrita_memory_pg.tools.args import ToolArgs, numbers_as_text
from amrita_memory_pg.tools.context import ToolContext

Importance = Annotated[ImportanceLabel, BeforeValidator(numbers_as_text)]

LIST_PREVIEW_CHARS = 80


class NoArgs(ToolArgs):
    pass


def loop_cycle(ctx: ToolContext) -> CycleContext:
    """The cycle a loop tool runs in; refused outside one."""
    if ctx.cycle is None:
        raise ToolError("这个工具只在后台整理循环（L3）中可用")
    return ctx.cycle


def preview(text: str, limit: int = LIST_PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def loop_paused(exc: MemoryPaused) -> dict[str, object]:
    """Every loop tool's reply while its target is paused (checked before each call)."""
    return {
        "status": "paused",
        "message": f"{exc.partition_key} 的记忆已被管理员暂停：本轮不读取也不修改记忆，请直接结束",
    }
